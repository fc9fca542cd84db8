/// The attachment edits the writers made to one ``RowChange``, by slot, each slot once, in the order they were made:
/// the first two kept inline, the others in an array. A row of a write with one or two extensions that attach (a bulk
/// insert with two views) allocates nothing for them, where an array allocated and freed one buffer per row (about
/// 450 instructions).
struct AttachmentEdits: RandomAccessCollection, MutableCollection {
    typealias Element = (slot: UInt32, edit: AttachmentEdit)

    private var first: Element = (0, .keep)
    private var second: Element = (0, .keep)
    private var more: [Element] = []
    /// How many edits there are.
    private(set) var count = 0

    var startIndex: Int { 0 }
    var endIndex: Int { count }

    subscript(position: Int) -> Element {
        get {
            switch position {
            case 0: first
            case 1: second
            default: more[position - 2]
            }
        }
        set {
            switch position {
            case 0: first = newValue
            case 1: second = newValue
            default: more[position - 2] = newValue
            }
        }
    }

    /// Calls `body` with each edit by ascending slot. Writers answer in registration order, usually the slots'
    /// order already: then no sorted copy is made (about 1k instructions a row of a bulk insert with two views).
    func inSlotOrder(_ body: (_ slot: UInt32, _ edit: AttachmentEdit) throws -> Void) rethrows {
        if zip(indices, indices.dropFirst()).allSatisfy({ self[$0].slot < self[$1].slot }) {
            for edit in self { try body(edit.slot, edit.edit) }
        } else {
            for edit in sorted(by: { $0.slot < $1.slot }) { try body(edit.slot, edit.edit) }
        }
    }

    /// Adds an edit after the others.
    mutating func append(_ element: Element) {
        switch count {
        case 0: first = element
        case 1: second = element
        default: more.append(element)
        }
        count += 1
    }
}
