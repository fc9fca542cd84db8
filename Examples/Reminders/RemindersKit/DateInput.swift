import Foundation

/// Parses the dates people type: `2026-11-25 10:00`, `2026-11-25`, `today 17:00`, `today`, `tomorrow`,
/// `tomorrow 9:30`, `fri 9:30`, `friday`, `17:00` (today). Times are 24-hour `H:MM`; a day without a time is 9:00.
/// A weekday means its next occurrence after today.
public struct DateInput: Sendable {
    /// "Now", which `today`, `tomorrow` and weekdays count from.
    public var now: Date
    /// The time zone dates are read in.
    public var timeZone: TimeZone

    /// Creates a parser.
    public init(now: Date, timeZone: TimeZone) {
        self.now = now
        self.timeZone = timeZone
    }

    var calendar: Foundation.Calendar {
        var calendar = Foundation.Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        return calendar
    }

    static let weekdays = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]

    /// The date `text` names.
    /// - Throws: ``RemindersError`` saying what forms are understood.
    public func parse(_ text: String) throws -> Date {
        let words = text.lowercased().split(separator: " ").map(String.init)
        guard !words.isEmpty, words.count <= 2 else { throw unparseable(text) }
        var day: Date?
        var time: (hour: Int, minute: Int)?
        for word in words {
            if let parsedTime = Self.time(word) {
                guard time == nil else { throw unparseable(text) }
                time = parsedTime
            } else if let parsedDay = self.day(word) {
                guard day == nil else { throw unparseable(text) }
                day = parsedDay
            } else {
                throw unparseable(text)
            }
        }
        let base = day ?? calendar.startOfDay(for: now)
        let (hour, minute) = time ?? (9, 0)
        guard let date = calendar.date(bySettingHour: hour, minute: minute, second: 0, of: base) else { throw unparseable(text) }
        return date
    }

    func day(_ word: String) -> Date? {
        let today = calendar.startOfDay(for: now)
        switch word {
        case "today": return today
        case "tomorrow": return calendar.date(byAdding: .day, value: 1, to: today)
        default: break
        }
        if let index = Self.weekdays.firstIndex(where: { word.hasPrefix($0) && ($0 == word || Self.fullWeekday($0) == word) }) {
            let current = calendar.component(.weekday, from: today) - 1
            var ahead = (index - current + 7) % 7
            if ahead == 0 { ahead = 7 }
            return calendar.date(byAdding: .day, value: ahead, to: today)
        }
        let parts = word.split(separator: "-")
        guard parts.count == 3, parts[0].count == 4, let year = Int(parts[0]), let month = Int(parts[1]), let dayNumber = Int(parts[2]),
              (1...12).contains(month), (1...31).contains(dayNumber) else { return nil }
        let components = DateComponents(year: year, month: month, day: dayNumber)
        guard let date = calendar.date(from: components), calendar.component(.day, from: date) == dayNumber else { return nil }
        return date
    }

    static func fullWeekday(_ short: String) -> String {
        ["sun": "sunday", "mon": "monday", "tue": "tuesday", "wed": "wednesday", "thu": "thursday", "fri": "friday", "sat": "saturday"][short] ?? short
    }

    static func time(_ word: String) -> (hour: Int, minute: Int)? {
        let parts = word.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1].count == 2, let hour = Int(parts[0]), let minute = Int(parts[1]),
              (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        return (hour, minute)
    }

    func unparseable(_ text: String) -> RemindersError {
        RemindersError("can't read the date '\(text)'; use forms like '2026-11-25 10:00', 'today 17:00', 'tomorrow', 'fri 9:30'")
    }
}

/// An error of the `reminders` tool: a message for the user, printed as `error: <message>` with exit status 1.
public struct RemindersError: Error, CustomStringConvertible, Sendable {
    /// What went wrong and what to do.
    public var message: String
    /// Creates an error.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}
