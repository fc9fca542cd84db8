import Foundation

/// The text of the first ```` ```swift ```` block after `marker` in `markdown` (between its fence lines), or `nil` when
/// there is no such marker or block: how the tests find the README's blocks that must equal a compiled file.
public func swiftBlock(after marker: String, in markdown: String) -> String? {
    guard let found = markdown.range(of: marker) else { return nil }
    let afterMarker = markdown[found.upperBound...]
    guard let start = afterMarker.range(of: "```swift\n"), let end = afterMarker[start.upperBound...].range(of: "```") else { return nil }
    return String(afterMarker[start.upperBound..<end.lowerBound])
}
