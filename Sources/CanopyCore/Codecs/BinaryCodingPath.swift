/// A link in a coding path, so that the binary encoder and decoder do not build `[CodingKey]` arrays for every value:
/// the array is made only when asked for.
///
/// A path is held as a parent node and a last key; the root has neither. Nodes are made only when a value two or more
/// levels deep is entered, and a keyed decoding container is itself the node of the values in it.
class BinaryCodingPathNode {
    let parent: BinaryCodingPathNode?
    let lastKey: (any CodingKey)?

    init(parent: BinaryCodingPathNode?, lastKey: (any CodingKey)?) {
        self.parent = parent
        self.lastKey = lastKey
    }

    /// The path this node stands for.
    var codingPath: [any CodingKey] {
        Self.path(parent: parent, key: lastKey)
    }

    /// The path of `parent` followed by `key`.
    static func path(parent: BinaryCodingPathNode?, key: (any CodingKey)?) -> [any CodingKey] {
        var keys: [any CodingKey] = []
        if let key { keys.append(key) }
        var node = parent
        while let current = node {
            if let key = current.lastKey { keys.append(key) }
            node = current.parent
        }
        keys.reverse()
        return keys
    }
}

/// The key of an element of an unkeyed container in a coding path, named like JSONDecoder's ("Index 3").
struct BinaryIndexKey: CodingKey {
    let index: Int

    init(_ index: Int) {
        self.index = index
    }

    init?(stringValue: String) {
        return nil
    }

    init?(intValue: Int) {
        index = intValue
    }

    var stringValue: String { "Index \(index)" }
    var intValue: Int? { index }
}

/// The key under which `superEncoder()` and `superDecoder()` keep the superclass's value.
struct BinarySuperKey: CodingKey {
    init() {}

    init?(stringValue: String) {
        guard stringValue == "super" else { return nil }
    }

    init?(intValue: Int) {
        return nil
    }

    var stringValue: String { "super" }
    var intValue: Int? { nil }
}
