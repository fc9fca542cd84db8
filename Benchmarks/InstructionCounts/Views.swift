import Canopy

/// The collection of the workloads (StoreBenchmarks' `records`).
let driverRecords = TypedCollection<BenchRecord, NoMetadata>("records")

/// StoreBenchmarks' "by-priority" view: 5 groups, by creation date.
func byPriority() -> View {
    View(
        name: "by-priority",
        grouping: .byObject(driverRecords) { _, record in "p\(record.priority)" },
        sorting: .byObject(driverRecords) { _, _, record in SortKey(.ascending(record.created)) },
        versionTag: "1")
}

/// StoreBenchmarks' "by-state" view: open / done, by title.
func byState() -> View {
    View(
        name: "by-state",
        grouping: .byObject(driverRecords) { _, record in record.done ? "done" : "open" },
        sorting: .byObject(driverRecords) { _, _, record in SortKey(.ascending(record.title)) },
        versionTag: "1")
}
