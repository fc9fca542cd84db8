import Foundation
import RemindersKit

// The `reminders` tool: the commands live in RemindersKit so that tests run them in-process.
exit(RemindersCLI.run(Array(CommandLine.arguments.dropFirst()), context: .live()))
