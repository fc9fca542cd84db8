/// A row's decoded object or metadata as a ``RowChange`` or a ``StoredRow`` keeps it for the extensions' closures,
/// without an `Any` box: the address of a value of a known type, either lent (the value a mutation is writing, which
/// lives in the mutation's frame while the extensions' writers handle the change) or owned (decoded once, kept until
/// the row goes).
///
/// A closure reads it in place (``borrow(as:_:)``): no copy through value witnesses per closure call, which retained
/// and released the value's strings four times a row of a bulk insert with two views; only a caller that asks for an
/// owned value (``copy(as:)``) copies.
///
/// The holder keeps the storage alive while anything borrows from it: it replaces a held value only when it holds
/// none, and destroys it only when the row goes (its holder's `deinit`) or the loan ends (``endLoan()``, after every
/// writer returned).
///
/// Noncopyable: an owned value has one holder, so it is destroyed once, when that holder goes (`deinit`), and never
/// read through a copy after that. A copy of the struct (which held the same address) destroyed twice, or kept past
/// its holder, would double-free or read freed memory; the compiler now refuses one. Moving it is explicit
/// (``take()``).
struct HeldValue: ~Copyable {
    private var address: UnsafeMutableRawPointer?
    private var type: Any.Type = Never.self
    private var owned = false

    /// No value.
    static var none: HeldValue { HeldValue() }

    private init() {}

    /// The value at `pointer`, lent: valid only while the lender's frame lives (the store ends the loan first).
    init<T>(lending pointer: UnsafePointer<T>) {
        address = UnsafeMutableRawPointer(mutating: pointer)
        type = T.self
    }

    /// `value`, moved into storage of its own, destroyed with the holder (`deinit`).
    init<T>(owning value: consuming T) {
        address = Self.store(value)
        type = T.self
        owned = true
    }

    /// `value` moved into storage of its own.
    private static func store<T>(_ value: consuming T) -> UnsafeMutableRawPointer {
        let storage = UnsafeMutablePointer<T>.allocate(capacity: 1)
        storage.initialize(to: value)
        return UnsafeMutableRawPointer(storage)
    }

    /// Destroys an owned value (a lent one is only forgotten).
    deinit {
        guard owned, let address else { return }
        func deinitialize<V>(_ type: V.Type) { address.assumingMemoryBound(to: V.self).deinitialize(count: 1) }
        _openExistential(type, do: deinitialize)
        address.deallocate()
    }

    /// Moves the held value out, leaving none: for a caller that hands it on from a closure (which may not consume
    /// what it captured).
    mutating func take() -> HeldValue {
        var taken = HeldValue()
        taken.address = address
        taken.type = type
        taken.owned = owned
        address = nil
        type = Never.self
        owned = false
        return taken
    }

    /// Whether no value is held.
    var isEmpty: Bool { address == nil }

    /// Whether the value is lent (see ``endLoan()``).
    var isLent: Bool { address != nil && !owned }

    /// Whether the held value's type is exactly `T` (a subclass or an existential takes ``boxed()`` and `as?`).
    @inline(__always)
    func holds<T>(_ type: T.Type) -> Bool {
        address != nil && self.type == T.self
    }

    /// Calls `body` with the held value in place. Only when ``holds(_:)`` says the type is `T`.
    ///
    /// The value is passed `inout` only because that is how Swift hands a closure a value at an address without
    /// copying it (read through `pointee`, a value passed by value is copied first: the callee could write the memory
    /// through another pointer). `body` must not change it: the callers pass it on by value, to closures that read it.
    @inline(__always)
    func borrow<T, R>(as type: T.Type, _ body: (inout T) throws -> R) rethrows -> R {
        try body(&address.unsafelyUnwrapped.assumingMemoryBound(to: T.self).pointee)
    }

    /// A copy of the held value. Only when ``holds(_:)`` says the type is `T`.
    @inline(__always)
    func copy<T>(as type: T.Type) -> T {
        UnsafePointer<T>(address.unsafelyUnwrapped.assumingMemoryBound(to: T.self)).pointee
    }

    /// A copy of the held value in an `Any`, or `nil` when none is held: the slow path of a caller that asks for
    /// another type than the held one (a superclass, a protocol).
    func boxed() -> Any? {
        guard let address else { return nil }
        func box<V>(_ type: V.Type) -> Any { address.assumingMemoryBound(to: V.self).pointee }
        return _openExistential(type, do: box)
    }

    /// A copy of a lent value in storage of its own (for a change a writer kept past its handling), so that the value
    /// outlives the lender's frame; an owned value or none stays as it is.
    mutating func own() {
        guard let address, !owned else { return }
        func copied<V>(_ type: V.Type) -> UnsafeMutableRawPointer { Self.store(address.assumingMemoryBound(to: V.self).pointee) }
        self.address = _openExistential(type, do: copied)
        owned = true
    }

    /// Ends a loan: a lent value is no longer held (an owned one stays).
    mutating func endLoan() {
        guard !owned else { return }
        address = nil
        type = Never.self
    }
}
