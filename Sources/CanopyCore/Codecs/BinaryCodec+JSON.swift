import Foundation

extension BinaryCodec {
    /// JSON text of a value in the binary format, read without its Swift type.
    ///
    /// Map keys stay in stored order (declaration order for synthesized `Codable`). Dates become ISO-8601 strings in
    /// UTC with milliseconds (`"2024-05-01T09:30:00.250Z"`), or a number of seconds since 2001 when outside the years
    /// 1 to 9999; `Data` becomes a base64 string; non-finite numbers become the strings "nan", "inf" and "-inf".
    ///
    /// - Throws: ``CodecError`` with code ``CodecError/Code/malformedBytes`` for truncated or corrupt bytes, or nesting
    ///   deeper than 512 levels.
    static func jsonText(from bytes: UnsafeRawBufferPointer, prettyPrinted: Bool) throws -> String {
        let reader = BinaryReader(bytes)
        var writer = JSONTextWriter(prettyPrinted: prettyPrinted)
        do throws(BinaryReadError) {
            let end = try reader.checkedRoot()
            var offset = BinaryFormat.headerSize
            try writeJSON(reader, &offset, limit: end, depth: 0, into: &writer)
        } catch {
            throw error.codecError
        }
        return writer.text
    }

    private static func writeJSON(
        _ reader: BinaryReader,
        _ offset: inout Int,
        limit: Int,
        depth: Int,
        into writer: inout JSONTextWriter
    ) throws(BinaryReadError) {
        typealias Tag = BinaryFormat.Tag
        let start = offset
        let tag = try reader.tag(at: offset, limit: limit)
        switch tag {
        case Tag.null:
            offset += 1
            writer.raw("null")
        case Tag.false, Tag.true:
            offset += 1
            writer.raw(tag == Tag.true ? "true" : "false")
        case Tag.int:
            writer.raw(String(try reader.readInteger(Int64.self, &offset, limit: limit)))
        case Tag.uint:
            writer.raw(String(try reader.readInteger(UInt64.self, &offset, limit: limit)))
        case Tag.float:
            writeNumber(Double(try reader.readFloat(&offset, limit: limit)), description: { "\(Float($0))" }, into: &writer)
        case Tag.double:
            writeNumber(try reader.readDouble(&offset, limit: limit), description: { "\($0)" }, into: &writer)
        case Tag.string:
            writer.string(try reader.readString(&offset, limit: limit))
        case Tag.bytes:
            writer.string(try reader.readData(&offset, limit: limit).base64EncodedString())
        case Tag.date:
            let seconds = try reader.readDate(&offset, limit: limit).timeIntervalSinceReferenceDate
            if let text = iso8601(secondsSinceReferenceDate: seconds) {
                writer.string(text)
            } else {
                writeNumber(seconds, description: { "\($0)" }, into: &writer)
            }
        case Tag.array, Tag.map:
            guard depth < BinaryFormat.maximumDepth else {
                throw .malformed("Containers nest deeper than \(BinaryFormat.maximumDepth) levels.", offset: start)
            }
            let payload = try reader.containerPayload(at: offset, limit: limit)
            var position = payload.start
            if tag == Tag.array {
                writer.beginArray()
                while position < payload.end {
                    writer.beginElement()
                    try writeJSON(reader, &position, limit: payload.end, depth: depth + 1, into: &writer)
                }
                writer.endArray()
            } else {
                writer.beginObject()
                while position < payload.end {
                    let entry = position
                    writer.key(try reader.utf8String(&position, limit: payload.end, start: entry))
                    try writeJSON(reader, &position, limit: payload.end, depth: depth + 1, into: &writer)
                }
                writer.endObject()
            }
            offset = payload.end
        default:
            throw .malformed("Unknown tag \(tag).", offset: offset)
        }
    }

    private static func writeNumber(
        _ value: Double,
        description: (Double) -> String,
        into writer: inout JSONTextWriter
    ) {
        if value.isNaN {
            writer.string("nan")
        } else if value.isInfinite {
            writer.string(value < 0 ? "-inf" : "inf")
        } else {
            writer.raw(description(value))
        }
    }

    /// `yyyy-MM-ddTHH:mm:ss.SSSZ` for a date in the years 1 to 9999, else `nil`.
    static func iso8601(secondsSinceReferenceDate seconds: Double) -> String? {
        let milliseconds = ((seconds + Date.timeIntervalBetween1970AndReferenceDate) * 1000).rounded()
        // 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z.
        guard milliseconds >= -62_135_596_800_000, milliseconds <= 253_402_300_799_999 else { return nil }
        let total = Int64(milliseconds)
        let millisecondsPerDay: Int64 = 86_400_000
        var days = total / millisecondsPerDay
        var timeOfDay = total % millisecondsPerDay
        if timeOfDay < 0 {
            days -= 1
            timeOfDay += millisecondsPerDay
        }
        // Howard Hinnant's civil_from_days.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        func padded(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2)
            + "T" + padded(timeOfDay / 3_600_000, 2) + ":" + padded(timeOfDay / 60_000 % 60, 2)
            + ":" + padded(timeOfDay / 1000 % 60, 2) + "." + padded(timeOfDay % 1000, 3) + "Z"
    }
}
