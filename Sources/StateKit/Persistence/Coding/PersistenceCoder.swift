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

    /// Decodes `data`; when it lacks properties the type has (a field added in a later release,
    /// nested or not), decodes it again with those properties taken from `defaultValue`.
    ///
    /// The stored JSON object is merged over the default value's, key by key, recursively:
    /// stored properties win, missing ones come from the default, and stored properties the type
    /// no longer has are ignored by decoding. Arrays are taken as stored.
    static func decode<Value: Decodable>(_ type: Value.Type, from data: Data, filling defaultValue: Value?) throws
        -> Value
    {
        do {
            return try decode(type, from: data)
        } catch DecodingError.keyNotFound(let key, let context) {
            guard let defaultValue = defaultValue as? any Encodable,
                let defaultData = try? encode(defaultValue),
                let merged = mergedJSON(data, over: defaultData, isVersioned: type is any VersionedValue.Type)
            else { throw DecodingError.keyNotFound(key, context) }
            return try decode(type, from: merged)
        }
    }

    /// Decodes `data` as a value of `defaultValue`'s type, filling missing properties from it.
    static func decode<Value: Decodable>(from data: Data, filling defaultValue: Value) throws -> Value {
        try decode(Value.self, from: data, filling: defaultValue)
    }

    /// Decodes `data` as the type `type` names at run time, filling missing properties from
    /// `defaultValue`; `nil` if the type is not `Decodable`.
    static func decodeIfDecodable(_ type: Any.Type, from data: Data, filling defaultValue: Any?) throws -> Any? {
        guard let decodable = type as? any Decodable.Type else { return nil }
        func open<T: Decodable>(_ type: T.Type) throws -> Any {
            try decode(type, from: data, filling: defaultValue as? T)
        }
        return try open(decodable)
    }

    /// Decodes the one element of the JSON array `data` as the type `type` names at run time;
    /// `nil` if the type is not `Decodable`.
    static func decodeIfDecodable(_ type: Any.Type, fromArrayOfOne data: Data) throws -> Any? {
        guard let decodable = type as? any Decodable.Type else { return nil }
        func open<T: Decodable>(_ type: T.Type) throws -> Any? {
            try JSONDecoder().decode([T].self, from: data).first
        }
        return try open(decodable)
    }

    /// `stored` merged over `defaults` (both JSON); `nil` when they are not both objects, or, for a
    /// ``VersionedValue``, when the stored value has no version envelope.
    private static func mergedJSON(_ stored: Data, over defaults: Data, isVersioned: Bool) -> Data? {
        guard let storedObject = try? JSONSerialization.jsonObject(with: stored) as? [String: Any],
            let defaultObject = try? JSONSerialization.jsonObject(with: defaults) as? [String: Any],
            !isVersioned || storedObject[EnvelopeKey.schemaVersion.rawValue] != nil
        else { return nil }
        return try? JSONSerialization.data(withJSONObject: merge(storedObject, over: defaultObject))
    }

    private static func merge(_ stored: [String: Any], over defaults: [String: Any]) -> [String: Any] {
        var merged = defaults
        for (key, value) in stored {
            if let nested = value as? [String: Any], let nestedDefault = defaults[key] as? [String: Any] {
                merged[key] = merge(nested, over: nestedDefault)
            } else {
                merged[key] = value
            }
        }
        return merged
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
