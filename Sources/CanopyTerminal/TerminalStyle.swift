#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A colour of the 8-colour ANSI palette, which every terminal shows (and themes adapt).
public enum TerminalColor: String, CaseIterable, Sendable, Codable {
    /// ANSI black.
    case black
    /// ANSI red.
    case red
    /// ANSI green.
    case green
    /// ANSI yellow.
    case yellow
    /// ANSI blue.
    case blue
    /// ANSI magenta.
    case magenta
    /// ANSI cyan.
    case cyan
    /// ANSI white.
    case white

    /// The SGR parameter of the colour as foreground (30–37).
    var foregroundCode: Int { 30 + (Self.allCases.firstIndex(of: self) ?? 7) }
}

/// How a piece of text looks: a foreground colour, bold, dim, reverse video. Applied as hand-written ANSI SGR
/// sequences, and only when colour is enabled (see ``TerminalColorPolicy``).
public struct TerminalStyle: Hashable, Sendable {
    /// The foreground colour, or `nil` for the terminal's default.
    public var foreground: TerminalColor?
    /// Bold (bright) text.
    public var bold: Bool
    /// Dim text.
    public var dim: Bool
    /// Reverse video (the selection, changed rows).
    public var reverse: Bool

    /// Creates a style; the default is plain text.
    public init(foreground: TerminalColor? = nil, bold: Bool = false, dim: Bool = false, reverse: Bool = false) {
        self.foreground = foreground
        self.bold = bold
        self.dim = dim
        self.reverse = reverse
    }

    /// Plain text.
    public static let plain = TerminalStyle()

    /// Whether the style changes nothing.
    public var isPlain: Bool { foreground == nil && !bold && !dim && !reverse }

    /// `text` wrapped in the style's escape sequences when `colour` is on, else `text` unchanged.
    public func apply(to text: String, colour: Bool) -> String {
        guard colour, !isPlain, !text.isEmpty else { return text }
        var codes: [Int] = []
        if bold { codes.append(1) }
        if dim { codes.append(2) }
        if reverse { codes.append(7) }
        if let foreground { codes.append(foreground.foregroundCode) }
        return "\u{1B}[" + codes.map(String.init).joined(separator: ";") + "m" + text + "\u{1B}[0m"
    }
}

/// Decides whether to colour output: only when it goes to a terminal and `NO_COLOR` is unset or empty
/// (https://no-color.org), and `TERM` isn't `dumb`.
public enum TerminalColorPolicy {
    /// Whether output to `fileDescriptor` should be coloured, given `environment`.
    public static func isEnabled(fileDescriptor: Int32, environment: [String: String]) -> Bool {
        isEnabled(isTerminal: isatty(fileDescriptor) == 1, environment: environment)
    }

    /// Whether output should be coloured, knowing whether it is a terminal.
    public static func isEnabled(isTerminal: Bool, environment: [String: String]) -> Bool {
        guard isTerminal else { return false }
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
        return environment["TERM"] != "dumb"
    }
}
