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
