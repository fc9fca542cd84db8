/// The options an extension records, as JSON through `Codable` with sorted keys: the form in which
/// ``StoreExtension/options`` is recorded (``ExtensionRecord/options``) and read back to be compared.
public enum ExtensionOptionsCoding {
    /// `value` as JSON with sorted keys.
    /// - Throws: the encoder's error when `value` has no JSON form (a non-finite number).
    public static func encode<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try JSONDecoderBox.encoder.encode(value), as: UTF8.self)
    }

    /// The options recorded as `json`, read as a `T`.
    /// - Throws: the decoder's error when `json` is not JSON or not a `T`.
    public static func decode<T: Decodable>(_ type: T.Type, from json: String) throws -> T {
        try JSONDecoderBox.decoder.decode(T.self, from: Array(json.utf8))
    }

    /// Why a recorded value is not a `type`, in a sentence (the decoder's description, with the path of the field).
    public static func reason(_ error: any Error, decoding type: Any.Type) -> String {
        guard let error = error as? DecodingError else { return "not a \(type): \(error)" }
        let context: DecodingError.Context
        switch error {
        case .dataCorrupted(let c), .keyNotFound(_, let c), .typeMismatch(_, let c), .valueNotFound(_, let c): context = c
        @unknown default: return "not a \(type): \(error)"
        }
        let path = context.codingPath.map(\.stringValue).joined(separator: ".")
        return "not a \(type)\(path.isEmpty ? "" : " at '\(path)'"): \(context.debugDescription)"
    }
}

/// An extension's options against those recorded with its registration.
enum RecordedOptionsComparison: Sendable, Hashable {
    /// The recorded value reads back as the extension's options (whatever its JSON spelling).
    case same
    /// The recorded value is another definition: the recorded and current JSON.
    case changed(recorded: String, current: String)
    /// The recorded value cannot be read as the extension's options type, for this reason.
    case unreadable(recorded: String, reason: String)
}

extension StoreExtension {
    /// ``options`` as the database records them: JSON with sorted keys, through `Codable`.
    /// - Throws: ``CanopyError/Code/invalidArgument`` when the options have no JSON form.
    public func recordedOptions() throws -> String {
        do {
            return try ExtensionOptionsCoding.encode(options)
        } catch {
            throw CanopyError(.invalidArgument, "the extension's options cannot be encoded as JSON (\(error)); give them values JSON can hold",
                              extensionName: name, underlying: error)
        }
    }

    /// Compares ``options`` with the JSON recorded by an earlier registration, as values: a record in an older JSON
    /// spelling of the same options is the same; one that is not an ``Options`` at all is
    /// ``RecordedOptionsComparison/unreadable(recorded:reason:)``, never ignored.
    func compareOptions(withRecorded recorded: String) throws -> RecordedOptionsComparison {
        let current = try recordedOptions()
        if current == recorded { return .same }
        let value: Options
        do {
            value = try ExtensionOptionsCoding.decode(Options.self, from: recorded)
        } catch {
            return .unreadable(recorded: recorded, reason: ExtensionOptionsCoding.reason(error, decoding: Options.self))
        }
        return value == options ? .same : .changed(recorded: recorded, current: current)
    }

    /// Whether `record` holds this extension's version tag, kind and options.
    func matchesDefinition(of record: ExtensionRecord) throws -> Bool {
        guard record.versionTag == versionTag, record.kind == kind else { return false }
        return try compareOptions(withRecorded: record.options) == .same
    }
}
