import Foundation

/// A persisted value that declares its schema version and migrates values stored by older versions.
///
/// When a persisted type changes between releases, adopt `VersionedValue`, raise
/// ``schemaVersion`` and decode the old shape in ``migrate(from:decoder:)``. Persisted
/// containers then store it as `{"schemaVersion": 2, "value": …}` and, on load, hand
/// anything older to `migrate`; a version newer than the type knows is a
/// ``StateDiagnostic/Kind/decodingFailed`` (the bytes are kept aside, the default is used).
///
/// ```swift
/// struct Settings: VersionedValue {
///     static let schemaVersion = 2
///     var theme: Theme
///     var fontSize: Double        // new in version 2
///
///     static func migrate(from storedVersion: Int, decoder: any Decoder) throws -> Settings {
///         let v1 = try SettingsV1(from: decoder)   // the old shape, kept for migrating
///         return Settings(theme: v1.theme, fontSize: 14)
///     }
/// }
/// ```
///
/// Values stored before the type adopted `VersionedValue` have no version; they arrive as
/// version 0, with `decoder` reading the whole stored value.
public protocol VersionedValue: Codable {
    /// The version this type writes; raise it whenever the stored shape changes.
    static var schemaVersion: Int { get }

    /// Builds a value from one stored by an older version of the type.
    ///
    /// - Parameters:
    ///   - storedVersion: The version that wrote the value, lower than ``schemaVersion``
    ///     (0 for a value stored without a version).
    ///   - decoder: Reads the stored value, as that version encoded it.
    /// - Throws: When the value cannot be migrated; the container then reports
    ///   ``StateDiagnostic/Kind/decodingFailed`` and starts from its default.
    static func migrate(from storedVersion: Int, decoder: any Decoder) throws -> Self
}

extension VersionedValue {
    /// Refuses to migrate: throws ``UnsupportedSchemaVersion``.
    public static func migrate(from storedVersion: Int, decoder: any Decoder) throws -> Self {
        throw UnsupportedSchemaVersion(type: "\(Self.self)", storedVersion: storedVersion, schemaVersion: schemaVersion)
    }
}

/// The error for a stored value whose schema version a ``VersionedValue`` cannot read: newer
/// than the type's, or older with no migration.
public struct UnsupportedSchemaVersion: Error, Sendable, CustomStringConvertible {
    /// The type that could not read the value.
    public let type: String
    /// The version that wrote the value.
    public let storedVersion: Int
    /// The version the type writes.
    public let schemaVersion: Int

    /// Creates the error.
    public init(type: String, storedVersion: Int, schemaVersion: Int) {
        self.type = type
        self.storedVersion = storedVersion
        self.schemaVersion = schemaVersion
    }

    /// `"Settings cannot read schema version 3 (it writes version 2)"`.
    public var description: String {
        "\(type) cannot read schema version \(storedVersion) (it writes version \(schemaVersion))"
    }
}
