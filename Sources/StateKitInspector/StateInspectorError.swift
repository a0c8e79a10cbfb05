/// Why a ``StateInspector`` could not start.
///
/// ```swift
/// do {
///     let inspector = try StateInspector.start(port: 8080)
///     print(inspector.url)
/// } catch {
///     print(error)  // e.g. "the inspector cannot listen on 127.0.0.1:8080: Address already in use"
/// }
/// ```
///
/// - Note: `StateInspectorError` is a value type; it is `Sendable`.
public struct StateInspectorError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The address the inspector was to listen on.
    public let address: String
    /// The port it was to listen on.
    public let port: UInt16
    /// What the system said, such as `"Address already in use"`.
    public let reason: String

    /// A sentence naming the address, the port and the reason.
    public var description: String {
        "the inspector cannot listen on \(address):\(port): \(reason)"
    }
}
