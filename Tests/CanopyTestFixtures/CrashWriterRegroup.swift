import Canopy
import CanopyTestSupport

/// What commit `number` of the cross-process many-group tests writes besides its two new entries: it rewrites one to
/// three earlier entries with a random part (`a`, `b` or `c`) and number (so each changes its set of groups in
/// ``crashWriterManyGroupView()`` — its part, "all", maybe "third" — and its place in each), and now and then removes
/// one. Deterministic for a seed and a commit.
public func crashWriterRegroup(_ txn: ReadWriteTransaction, number: Int, seed: UInt64) throws {
    guard number > 1 else { return }
    var random = SeededRandom(seed: seed &* 1_000_003 &+ UInt64(number))
    for _ in 0..<(1 + Int(random.next() % 3)) {
        let key = "\(1 + Int(random.next() % UInt64(number - 1)))-\(random.next() % 2 == 0 ? "a" : "b")"
        if random.next() % 8 == 0 {
            _ = try txn.remove(key: key, in: crashWriterEntries)
            continue
        }
        let part = ["a", "b", "c"][Int(random.next() % 3)]
        try txn.set(CrashWriterEntry(number: Int(random.next() % 60), part: part), forKey: key, in: crashWriterEntries)
    }
}

/// One step of an observer's model of a view: `changes` (the observer's latest changeset) applied to `old` (what the
/// model showed), and what the view shows at the observer's snapshot, which the model must equal; with the
/// `CrashWriter`'s counter there (the number of its last commit).
/// - Throws: ``ChangesetViolation`` when the changeset breaks the batch rules; what reading throws.
public func applyObserved(_ changes: ViewChangeset, to old: Rendering, observer: ViewObserver, rowsInManyGroups: Bool = true) throws
    -> (applied: Rendering, expected: Rendering, counter: Int) {
    let mappings = changes.mappings
    return try observer.read { txn in
        let reader = try txn.view(mappings.view)
        let applied = changes.isReload ? try Rendering(mappings: mappings, reader: reader)
            : try ChangesetApplier.apply(changes, to: old, rowsInManyGroups: rowsInManyGroups) { try mappings.rowIDs(inSection: $0, reader: reader) }
        let counter = try txn.object(forKey: "n", in: TypedCollection<Int, NoMetadata>("counter")) ?? 0
        return (applied, try Rendering(mappings: mappings, reader: reader), counter)
    }
}
