/// Writes JSON text, compact or indented like `JSONEncoder`'s `.prettyPrinted` (two spaces, `"key" : value`).
struct JSONTextWriter {
    private var bytes: [UInt8] = []
    private let prettyPrinted: Bool
    private var depth = 0
    /// Whether the innermost open container has no element yet.
    private var isFirst = true

    init(prettyPrinted: Bool) {
        self.prettyPrinted = prettyPrinted
        bytes.reserveCapacity(256)
    }

    var text: String {
        String(decoding: bytes, as: UTF8.self)
    }

    private mutating func newline() {
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
    }

    /// Starts an element of the innermost container (not needed for a value that follows a key).
    mutating func beginElement() {
        guard depth > 0 else { return }
        if !isFirst { bytes.append(UInt8(ascii: ",")) }
        if prettyPrinted { newline() }
        isFirst = false
    }

    mutating func beginObject() {
        bytes.append(UInt8(ascii: "{"))
        depth += 1
        isFirst = true
    }

    mutating func endObject() {
        endContainer(UInt8(ascii: "}"))
    }

    mutating func beginArray() {
        bytes.append(UInt8(ascii: "["))
        depth += 1
        isFirst = true
    }

    mutating func endArray() {
        endContainer(UInt8(ascii: "]"))
    }

    private mutating func endContainer(_ close: UInt8) {
        depth -= 1
        if prettyPrinted && !isFirst { newline() }
        bytes.append(close)
        // The container is an element of its parent, which therefore has one.
        isFirst = false
    }

    /// Writes an object's key and the colon; the value follows without `beginElement()`.
    mutating func key(_ key: String) {
        beginElement()
        string(key)
        if prettyPrinted {
            bytes.append(contentsOf: " : ".utf8)
        } else {
            bytes.append(UInt8(ascii: ":"))
        }
    }

    /// Writes text that is already JSON, such as a number or `null`.
    mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    /// Writes a quoted, escaped string.
    mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\n"): bytes.append(contentsOf: #"\n"#.utf8)
            case UInt8(ascii: "\r"): bytes.append(contentsOf: #"\r"#.utf8)
            case UInt8(ascii: "\t"): bytes.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(Self.hexDigit(byte >> 4))
                bytes.append(Self.hexDigit(byte & 0xF))
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    /// Valid JSON text re-indented as ``JSONTextWriter`` indents; strings are copied unchanged.
    static func reindented(_ text: String) -> String {
        let input = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(input.count * 2)
        var depth = 0
        var inString = false
        var escaped = false

        func isSpace(_ byte: UInt8) -> Bool {
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
                || byte == UInt8(ascii: "\t")
        }
        func newline() {
            output.append(UInt8(ascii: "\n"))
            output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
        }

        var index = 0
        while index < input.count {
            let byte = input[index]
            index += 1
            if inString {
                output.append(byte)
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                output.append(byte)
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                output.append(byte)
                var next = index
                while next < input.count && isSpace(input[next]) { next += 1 }
                if next < input.count && (input[next] == UInt8(ascii: "}") || input[next] == UInt8(ascii: "]")) {
                    output.append(input[next])
                    index = next + 1
                } else {
                    depth += 1
                    newline()
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                newline()
                output.append(byte)
            case UInt8(ascii: ","):
                output.append(byte)
                newline()
            case UInt8(ascii: ":"):
                output.append(contentsOf: " : ".utf8)
            case _ where isSpace(byte):
                break
            default:
                output.append(byte)
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
