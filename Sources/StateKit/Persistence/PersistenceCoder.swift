import Foundation

/// Turns persisted values into bytes and back: JSON with sorted keys, wrapped in a
/// `{"schemaVersion", "value"}` envelope when the type is a ``VersionedValue``.
enum PersistenceCoder {
    static func encode<Value: Encodable>(_ value: Value) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if let versioned = value as? any VersionedValue {
            return try encodeVersioned(versioned, with: encoder)
        }
        return try encoder.encode(value)
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data) throws -> Value {
        if let versioned = type as? any VersionedValue.Type {
            return try decodeVersioned(versioned, from: data) as! Value
        }
        return try JSONDecoder().decode(type, from: data)
    }

    /// Decodes `data` as the `Decodable` type `type` names at run time; `nil` if it is not `Decodable`.
    static func decodeIfDecodable(_ type: Any.Type, from data: Data) throws -> Any? {
        guard let decodable = type as? any Decodable.Type else { return nil }
        return try decode(decodable, from: data)
    }

    /// Encodes `value` if its run-time type is `Encodable`; `nil` if it is not.
    static func encodeIfEncodable(_ value: Any) throws -> Data? {
        guard let encodable = value as? any Encodable else { return nil }
        return try encode(encodable)
    }

    private static func encodeVersioned<Value: VersionedValue>(_ value: Value, with encoder: JSONEncoder) throws -> Data
    {
        try encoder.encode(Envelope(schemaVersion: Value.schemaVersion, value: value))
    }

    private static func decodeVersioned<Value: VersionedValue>(_ type: Value.Type, from data: Data) throws -> Value {
        try JSONDecoder().decode(VersionedDecoding<Value>.self, from: data).value
    }
}

private enum EnvelopeKey: String, CodingKey {
    case schemaVersion
    case value
}

private struct Envelope<Value: Encodable>: Encodable {
    let schemaVersion: Int
    let value: Value

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: EnvelopeKey.self)
        try container.encode(schemaVersion, forKey: .schemaVersion)
        try container.encode(value, forKey: .value)
    }
}

/// Reads an envelope and migrates older versions; a value without an envelope is version 0.
private struct VersionedDecoding<Value: VersionedValue>: Decodable {
    let value: Value

    init(from decoder: any Decoder) throws {
        guard let container = try? decoder.container(keyedBy: EnvelopeKey.self),
            let storedVersion = try? container.decode(Int.self, forKey: .schemaVersion),
            container.contains(.value)
        else {
            value = try Value.migrate(from: 0, decoder: decoder)
            return
        }
        let valueDecoder = try container.superDecoder(forKey: .value)
        if storedVersion == Value.schemaVersion {
            value = try Value(from: valueDecoder)
        } else if storedVersion < Value.schemaVersion {
            value = try Value.migrate(from: storedVersion, decoder: valueDecoder)
        } else {
            throw UnsupportedSchemaVersion(
                type: "\(Value.self)", storedVersion: storedVersion, schemaVersion: Value.schemaVersion)
        }
    }
}
