/// Hands back a value kept as `Any` (a row's decoded object or metadata) as the type a caller asks for, without a
/// dynamic cast when the types are the same: the one copy of that fast path, for ``RowChange`` and ``StoredRow``.
enum TypedValue {
    /// `value` (an `Any`, opened as `Value`) as a `T` when its type is exactly `T`, otherwise `nil` (the caller then
    /// falls back to `as? T`, which also takes subclasses and existentials).
    ///
    /// The comparison is of metatypes, and the copy is a load of the same type, so no cast can fail and none is
    /// forced: in unspecialized generic code run once per row, extension and closure, it costs less than `as? T`.
    @inline(__always)
    static func take<Value, T>(_ value: Value, as type: T.Type) -> T? {
        guard Value.self == T.self else { return nil }
        return withUnsafePointer(to: value) { UnsafeRawPointer($0).load(as: T.self) }
    }
}
