/// The version of this Canopy build and the storage format it writes, as the tools print them with `--version`.
public enum CanopyVersion {
    /// The release of the package.
    public static let release = "0.17.0"
    /// The storage format tag this build reads and writes (`canopy.info`'s `format`).
    public static var storageFormat: String { StoreTables.formatTag }
    /// Such as `0.17.0 (storage format canopy/3)`.
    public static var description: String { "\(release) (storage format \(storageFormat))" }
}
