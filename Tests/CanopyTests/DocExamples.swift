import Canopy
import Foundation

/// The code blocks of the DocC articles Views.md, Observation.md and ManualLists.md, in order and verbatim (indented), so that compiling
/// the tests compiles the articles and DocExamplesTests runs them on a fresh database.
func articleExamples(database: Database, connection: Connection) throws {
    // From the articles, verbatim (DocExamplesTests checks it).
    struct Reminder: Codable, Sendable { var title: String; var day: String; var due: Date; var done: Bool }
    let reminders = TypedCollection<Reminder, NoMetadata>("reminders")

    let agenda = View(
        name: "agenda",
        grouping: .byObject(reminders) { _, reminder in reminder.done ? nil : reminder.day },
        sorting: .byObject(reminders) { _, _, reminder in
            SortKey(.ascending(reminder.due), .ascending(reminder.title))
        },
        versionTag: "1")
    try database.register(agenda)

    try connection.read { txn in
        let view = try txn.view("agenda")
        for day in try view.groups() {
            let first = try view.object(at: 0, inGroup: day, in: reminders)
            print(day, try view.count(inGroup: day), first?.title ?? "")
        }
    }

    // From the articles, verbatim (DocExamplesTests checks it).
    var mappings = ViewMappings(groups: ["today", "tomorrow", "later"], view: "agenda")
    mappings.setSectionKind(.static, forGroup: "today")
    mappings.setOptions(.init(range: .first(20)), forGroup: "later")
    let observer = try ViewObserver(database: database, mappings: mappings)

    try connection.readWrite { txn in
        try txn.set(Reminder(title: "Call Ann", day: "today", due: Date(), done: false), forKey: "r1", in: reminders)
    }
    let changes = try observer.advance()
    for change in changes.sectionChanges { print(change) }
    for change in changes.rowChanges { print(change) }  // insert reminders/r1 [0, 0]
    let title = try observer.read { txn in
        try changes.mappings.object(at: ViewIndexPath(section: 0, row: 0), reader: txn.view("agenda"), in: reminders)?.title
    }
    print(title ?? "")  // Call Ann

    // From the articles, verbatim (DocExamplesTests checks it).
    var chat = ViewMappings(groups: ["today"], view: "agenda")
    let latest = ViewMappings.FlexibleWindow(length: 50, from: .end, maxLength: 200, growth: .bottom)
    chat.setOptions(.init(range: .flexible(latest), drawingDependencies: [-1]), forGroup: "today")
    let chatObserver = try ViewObserver(database: database, mappings: chat)
    if let window = chatObserver.mappings.flexibleWindow(forGroup: "today") {
        print(window.offset, window.length)  // 0 1: the group has one row so far
    }

    // Load more: 50 rows further up, as a changeset the UI can animate.
    var more = chatObserver.mappings
    if let window = more.flexibleWindow(forGroup: "today") {
        more.setFlexibleWindow(offset: window.offset, length: window.length + 50, forGroup: "today")
    }
    let loaded = try chatObserver.read { txn in
        try ViewChangeset.compute(from: chatObserver.mappings, to: more, reader: txn.view("agenda"))
    }
    print(loaded.rowChanges.count)  // 0: there is nothing further up yet
    try chatObserver.setMappings(more)

    var overview = ViewMappings(groups: ["today", "tomorrow", "later"], view: "agenda")
    overview.setRange(.fixed(length: 10, offset: 10, from: .start), forGroup: "later")  // the 11th to the 20th
    overview.setConsolidation(threshold: 5, sectionName: "Soon")  // one section while fewer than 5 rows show

    // From the articles, verbatim (DocExamplesTests checks it).
    let watching = Task {
        for try await changes in observer.changes() {
            let count = changes.mappings.numberOfItems
            print("\(changes.rowChanges.count) row changes, \(count) rows shown")
        }
    }
    watching.cancel()

    // From the articles, verbatim (DocExamplesTests checks it).
    let observation = observer.observe(on: MainActor.shared) { _, result in
        guard case .success(let changes) = result, !changes.isEmpty else { return }
        // apply `changes` to the list; observer.read { } here reads the state they lead to
    }
    observation.cancel()

    // From the articles, verbatim (DocExamplesTests checks it).
    struct Chore: Codable, Sendable { var title: String }
    let chores = TypedCollection<Chore, NoMetadata>("chores")
    try database.register(ManualView.make(name: "focus", collections: [chores.name]))

    try connection.readWrite { txn in
        for (key, title) in [("t1", "Write report"), ("t2", "Call Ann"), ("t3", "Buy milk")] {
            try txn.set(Chore(title: title), forKey: key, in: chores)
        }
        let focus = try txn.manualList("focus")
        try focus.append(key: "t1", inCollection: chores.name)
        try focus.append(key: "t2", inCollection: chores.name)
        try focus.insert(key: "t3", inCollection: chores.name, at: 0)  // t3 t1 t2
        try focus.move(from: 2, to: 0)                                   // t2 t3 t1
    }
    let order = try connection.read { txn in try txn.view("focus").rowIDs(inGroup: "focus").map(\.key) }
    print(order)  // ["t2", "t3", "t1"]

    let focusObserver = try ViewObserver(database: database, mappings: ViewMappings(groups: ["focus"], view: "focus"))
    try connection.readWrite { txn in try txn.manualList("focus").move(from: 0, to: 2) }  // t3 t1 t2
    let changeset = try focusObserver.advance()
    for change in changeset.rowChanges {
        print(change.kind, change.id.key, change.originalIndexPath?.row ?? -1, change.finalIndexPath?.row ?? -1)
    }
    // move t2 0 2
}
