/// Turns the error of a failed decode into a sentence that says what was wrong with the stored value and what
/// probably caused it: a key the type needs that the row lacks, a value of another type, a null, or bytes that do not
/// parse at all ("corrupt" is only said of those).
enum DecodingExplanation {
    /// The message of a ``CanopyError/Code/decodingFailed`` for a value of type `type` that `error` kept from decoding.
    static func message(for error: any Error, decoding type: Any.Type, codecName: String) -> String {
        let typeName = String(reflecting: type)
        let shortName = String(describing: type)
        let hint = "See Model evolution in Canopy's documentation: migrate the stored rows, or decode the key with decodeIfPresent and a default"
        guard let decodingError = error as? DecodingError else {
            if let codecError = error as? CodecError, codecError.code == .malformedBytes {
                return "cannot decode \(typeName) with codec '\(codecName)': the stored bytes are corrupt (\(codecError.message))"
            }
            return "cannot decode \(typeName) with codec '\(codecName)': its init(from:) threw \(error)"
        }
        switch decodingError {
        case .keyNotFound(let key, let context):
            let path = render(context.codingPath + [key])
            return "cannot decode \(typeName): the stored object has no value for '\(path)' (a property added to \(shortName) after this row was written, or renamed? \(hint))"
        case .typeMismatch(let expected, let context):
            return "cannot decode \(typeName): the stored value at '\(render(context.codingPath))' is not \(article(expected)) (\(context.debugDescription)) — a property whose type changed in \(shortName)? \(hint)"
        case .valueNotFound(let expected, let context):
            return "cannot decode \(typeName): the stored value at '\(render(context.codingPath))' is null, but \(shortName) expects \(article(expected)) there (a property that was optional before? \(hint))"
        case .dataCorrupted(let context):
            if isMalformed(context) {
                return "cannot decode \(typeName) with codec '\(codecName)': the stored bytes are corrupt (\(context.debugDescription))"
            }
            return "cannot decode \(typeName): the stored value at '\(render(context.codingPath))' is not valid for it (\(context.debugDescription)) — an enum case or format that changed in \(shortName)? \(hint)"
        @unknown default:
            return "cannot decode \(typeName) with codec '\(codecName)': \(decodingError)"
        }
    }

    /// Whether a `dataCorrupted` error says the bytes do not parse (as opposed to a parsed value that is invalid for
    /// the type, such as an unknown enum case).
    static func isMalformed(_ context: DecodingError.Context) -> Bool {
        if let codecError = context.underlyingError as? CodecError, codecError.code == .malformedBytes { return true }
        // Foundation's JSONDecoder reports text that is not JSON at the root, with the parser's error underneath.
        return context.codingPath.isEmpty && (context.underlyingError != nil || context.debugDescription.contains("not valid JSON"))
    }

    /// Whether `error` (or the error a ``CanopyError`` wraps) is a decode that failed on a value of another shape
    /// rather than on bytes that do not parse.
    static func isShapeMismatch(_ error: any Error) -> Bool {
        guard let decodingError = error as? DecodingError else { return false }
        if case .dataCorrupted(let context) = decodingError { return !isMalformed(context) }
        return true
    }

    /// A coding path as `a.b[2].c`.
    static func render(_ path: [any CodingKey]) -> String {
        guard !path.isEmpty else { return "(the whole value)" }
        var text = ""
        for key in path {
            if let index = key.intValue, key.stringValue == "Index \(index)" || key.stringValue == String(index) {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
            }
        }
        return text
    }

    private static func article(_ type: Any.Type) -> String {
        let name = String(describing: type)
        let vowel = name.first.map { "AEIOU".contains($0) } ?? false
        return (vowel ? "an " : "a ") + name
    }
}

extension Codecs {
    /// A sentence explaining why stored bytes did not decode as `type`: the key the stored object lacks, the key whose
    /// value has another type (naming both types), the key holding a null, or, only for bytes that do not parse,
    /// that they are corrupt. Canopy puts it in the message of every ``CanopyError/Code/decodingFailed``; extensions
    /// that decode rows themselves can do the same.
    ///
    /// - Parameters:
    ///   - error: What the codec threw (a `DecodingError`, or what the type's `init(from:)` threw).
    ///   - type: The type that was decoded.
    ///   - codecName: The codec's name, such as "binary".
    /// - Returns: The sentence, with a pointer to the Model evolution article when a model change is the likely cause.
    public static func explainDecodingFailure(_ error: any Error, decoding type: Any.Type, codecName: String) -> String {
        DecodingExplanation.message(for: error, decoding: type, codecName: codecName)
    }
}
