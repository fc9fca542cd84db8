import Foundation

/// JSON coding of the store's own small records (extension registrations).
enum JSONDecoderBox {
    static var decoder: JSONDecoder { JSONDecoder() }
    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}

extension JSONDecoder {
    func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try decode(type, from: Data(bytes))
    }
}
