import Foundation
public protocol Codec: Sendable {
    var name: String { get }
    func encode<T: Encodable>(_ value: T) throws -> [UInt8]
    func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T
}
public struct JSONCodec: Codec {
    public init() {}
    public var name: String { "json" }
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] { Array(try JSONEncoder().encode(value)) }
    public func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T { try JSONDecoder().decode(T.self, from: Data(bytes)) }
}
public struct BinaryCodec: Codec {
    public init() {}
    public var name: String { "binary" }
    public func encode<T: Encodable>(_ value: T) throws -> [UInt8] { Array(try JSONEncoder().encode(value)) }
    public func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T { try JSONDecoder().decode(T.self, from: Data(bytes)) }
}
public enum Codecs {
    public static func named(_ name: String) -> (any Codec)? { name == "json" ? JSONCodec() : name == "binary" ? BinaryCodec() : nil }
}
