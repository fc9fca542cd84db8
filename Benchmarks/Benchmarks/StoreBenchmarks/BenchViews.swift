import Canopy

// The two views of the view workloads, shared by StoreBenchmarks and InstructionCounts (its Views.swift links this
// file), so that both measure the same definitions.

/// Groups by priority ("p0" to "p4"), sorted by creation date.
func byPriority() -> View {
    View(
        name: "by-priority",
        grouping: .byObject(benchRecords) { _, record in "p\(record.priority)" },
        sorting: .byObject(benchRecords) { _, _, record in SortKey(.ascending(record.created)) },
        versionTag: "1")
}

/// Groups by state ("open", "done"), sorted by title.
func byState() -> View {
    View(
        name: "by-state",
        grouping: .byObject(benchRecords) { _, record in record.done ? "done" : "open" },
        sorting: .byObject(benchRecords) { _, _, record in SortKey(.ascending(record.title)) },
        versionTag: "1")
}

/// The many-group views of ManyGroupBenchmarks (issue 20 item 1).
enum ManyGroupWorkload {
    /// Each record in 3 groups: its priority, its state and one of 7 buckets, sorted by creation date in each.
    static func threeGroups() -> View {
        View(
            name: "three-groups",
            grouping: .manyByObject(benchRecords) { _, record in ["p\(record.priority)", record.done ? "done" : "open", "b\(record.id % 7)"] },
            sorting: .byObject(benchRecords) { _, _, record in SortKey(.ascending(record.created)) },
            versionTag: "1")
    }

    /// Every record in the group "all" (sorted by id) and in one of 5 priority groups: the changeset lines move a
    /// row within "all", as the one-group lines do in the view "single".
    static func allAndPriority() -> View {
        View(
            name: "all-and-priority",
            grouping: .manyByObject(benchRecords) { _, record in ["all", "p\(record.priority)"] },
            sorting: .byObject(benchRecords) { _, _, record in SortKey(.ascending(record.id)) },
            versionTag: "1")
    }
}
