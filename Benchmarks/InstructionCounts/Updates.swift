import Canopy
import Foundation

/// One-row updates of a populated store with the two benchmark views, `Durability.none`, 100 per iteration: each row
/// moves to another group of both views (StoreBenchmarks' `ViewStore.update`). With `observed`, an observer over
/// "by-priority" (all groups) advances after each update, as `update-2-views-observed-none canopy` does; without, the
/// writes alone (the views' writers and the commit).
func updates(iterations: Int, observed: Bool) throws {
    let (database, connection, directory) = try openStore("updates", durability: .none, populated: true, views: [byPriority(), byState()])
    defer { withExtendedLifetime((database, directory)) {} }
    let observer = observed ? try ViewObserver(database: database, mappings: ViewMappings(view: "by-priority", groupFilter: { _ in true })) : nil
    let rows = UInt64(Workload.rowCount)
    var generator = XorShift()
    for round in -1..<iterations {  // -1: warm-up
        var changes = 0
        let writes = {
            for _ in 0..<updatesPerIteration {
                let index = Int(generator.next() % rows)
                var record = Workload.records[index]
                record.priority = (record.priority + 2 + round) % 5
                record.done.toggle()
                record.created = record.created.addingTimeInterval(Double(round + 1))
                try connection.readWrite { txn in try txn.set(record, forKey: Workload.keys[index], in: driverRecords) }
                if let observer { changes += try observer.advance().rowChanges.count }
            }
        }
        if round >= 0 { try measured(writes) } else { try writes() }
        if observed, changes != updatesPerIteration { throw DriverError("the observer saw \(changes) row changes for \(updatesPerIteration) updates") }
    }
}

/// Updates per measured iteration (StoreBenchmarks' `ViewWorkload.updatesPerIteration`).
let updatesPerIteration = 100
