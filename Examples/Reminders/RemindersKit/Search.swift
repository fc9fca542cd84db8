import ArgumentParser
import CanopySearch
import Foundation

/// `reminders search TEXT`: events and reminders whose words match, best first.
struct Search: ContextualCommand {
    static let configuration = CommandConfiguration(
        abstract: "Find events and reminders by their words, best first.",
        discussion: """
            Words match whatever their case and accents (crème = Creme); milk* matches words that start with milk; \
            "buy milk" (quoted) matches the words in a row; every term must match. Tags are searched too (work finds \
            what is tagged #work). Titles count twice as much as an event's location and notes, or tags. At a terminal \
            the matched words are highlighted.
            """)
    @OptionGroup var options: DatabaseOptions
    @Argument(help: "What to look for.") var words: [String]
    @Option(help: "Show at most this many matches.") var limit = 20

    func run(in context: RemindersContext) throws {
        guard limit > 0 else { throw RemindersError("--limit must be at least 1, not \(limit)") }
        let query = words.joined(separator: " ")
        let path = context.databasePath(options.db)
        guard try RemindersStore.exists(at: path) else {
            context.print("Nothing yet: no database at \(path). Add something with `reminders add event` or `reminders add reminder`.")
            return
        }
        let store = try options.open(context, create: false)
        let context = context.inZone(store.timeZone)
        let matches = try store.search(query, limit: limit)
        guard !matches.isEmpty else {
            context.print("No event or reminder matches \(query).")
            return
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_GB")
        formatter.timeZone = context.timeZone
        formatter.dateFormat = "EEE d MMM HH:mm"
        let highlight: (SearchHit.Field) -> String = { field in
            context.colour ? field.highlighted(open: "\u{1B}[1;33m", close: "\u{1B}[0m") : field.text
        }
        for (item, hit) in matches {
            let title = hit.fields.first { $0.name == "title" }.map(highlight) ?? item.title
            let kind: String
            switch item {
            case .event(_, let event): kind = "event \(formatter.string(from: event.start))"
            case .reminder(_, let reminder): kind = "reminder" + (reminder.due.map { " due \(formatter.string(from: $0))" } ?? "") + (reminder.done ? " (done)" : "")
            }
            context.print("#\(item.id)  \(title)  · \(kind)")
            // The other fields when they matched: where the words are.
            for field in hit.fields where field.name != "title" && !field.ranges.isEmpty {
                context.print("      \(highlight(field))")
            }
        }
    }
}
