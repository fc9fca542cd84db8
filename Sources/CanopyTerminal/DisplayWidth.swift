/// Display widths of text in a terminal: how many columns a string takes, so that rows are truncated and padded by
/// what the eye sees, not by `count`. Wide (East Asian, emoji) characters take 2 columns, combining marks and format
/// characters 0, others 1; control characters are shown as a space.
public enum DisplayWidth {
    /// The number of terminal columns `character` takes.
    public static func of(_ character: Character) -> Int {
        var width = 0
        var sawVisible = false
        for scalar in character.unicodeScalars {
            let value = scalar.value
            if value == 0xFE0F { width = 2; continue }  // emoji presentation selector
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .format: continue
            case .control: sawVisible = true; width = max(width, 1); continue
            default: break
            }
            sawVisible = true
            width = max(width, isWide(scalar) ? 2 : 1)
        }
        return sawVisible || width > 0 ? width : 0
    }

    /// The number of terminal columns `text` takes.
    public static func of(_ text: String) -> Int {
        text.reduce(0) { $0 + of($1) }
    }

    /// Whether `scalar` takes two columns (East Asian wide or fullwidth, or an emoji shown as an emoji by default).
    static func isWide(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        if value < 0x1100 { return false }
        if scalar.properties.isEmojiPresentation { return true }
        switch value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
             0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
             0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return true
        default:
            return false
        }
    }

    /// `text` with control characters (tabs, newlines, escapes) replaced by spaces, so it can't move the cursor.
    public static func sanitized(_ text: String) -> String {
        String(text.map { character in
            character.unicodeScalars.contains { $0.properties.generalCategory == .control } ? " " : character
        })
    }

    /// `text` cut to at most `width` columns, ending with `ellipsis` when cut; a wide character that doesn't fit
    /// whole is dropped (never half shown).
    public static func truncate(_ text: String, to width: Int, ellipsis: String = "…") -> String {
        let width = max(0, width)
        guard of(text) > width else { return text }
        let ellipsisWidth = of(ellipsis)
        guard width >= ellipsisWidth else { return "" }
        var result = ""
        var used = 0
        for character in text {
            let w = of(character)
            if used + w > width - ellipsisWidth { break }
            result.append(character)
            used += w
        }
        return result + ellipsis
    }

    /// `text` truncated to `width` columns and padded with spaces to exactly `width`, on the right (`left` alignment)
    /// or the left (`right` alignment); a `width` above ``TerminalListView/maximumSize`` is taken as that.
    public static func fit(_ text: String, to width: Int, alignment: TerminalColumn.Alignment = .left) -> String {
        let width = min(width, TerminalListView.maximumSize)
        let cut = truncate(sanitized(text), to: width)
        let padding = String(repeating: " ", count: max(0, width - of(cut)))
        return alignment == .left ? cut + padding : padding + cut
    }
}
