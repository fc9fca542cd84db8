/// A key pressed in interactive mode.
public enum Key: Hashable, Sendable {
    /// ↑
    case up
    /// ↓
    case down
    /// Page Up
    case pageUp
    /// Page Down
    case pageDown
    /// Home
    case home
    /// End
    case end
    /// Return
    case enter
    /// Escape alone
    case escape
    /// A printable character (`q`, space, letters the app binds).
    case character(Character)

    /// The keys in `bytes` (what a terminal sends in raw mode): arrows and paging keys as their escape sequences
    /// (`ESC [ A`, `ESC [ 5 ~`, `ESC O H`, ...), other bytes as characters. Unknown sequences are skipped.
    public static func parse(_ bytes: [UInt8]) -> [Key] {
        var keys: [Key] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x1B {
                guard index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "[") || bytes[index + 1] == UInt8(ascii: "O") else {
                    keys.append(.escape)
                    index += 1
                    continue
                }
                var end = index + 2
                while end < bytes.count, !(0x40...0x7E).contains(bytes[end]) { end += 1 }
                guard end < bytes.count else { break }
                let body = String(decoding: bytes[(index + 2)...end], as: UTF8.self)
                switch body {
                case "A": keys.append(.up)
                case "B": keys.append(.down)
                case "5~": keys.append(.pageUp)
                case "6~": keys.append(.pageDown)
                case "H", "1~", "7~": keys.append(.home)
                case "F", "4~", "8~": keys.append(.end)
                default: break
                }
                index = end + 1
            } else if byte == 0x0D || byte == 0x0A {
                keys.append(.enter)
                index += 1
            } else if byte < 0x80 {
                keys.append(.character(Character(Unicode.Scalar(byte))))
                index += 1
            } else {
                // A UTF-8 sequence: decode up to 4 bytes.
                let length = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : 2
                let end = min(bytes.count, index + length)
                if let character = String(decoding: bytes[index..<end], as: UTF8.self).first { keys.append(.character(character)) }
                index = end
            }
        }
        return keys
    }
}
