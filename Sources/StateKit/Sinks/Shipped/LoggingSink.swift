import Foundation

/// A sink that writes one structured line per change, in `logfmt` style, to standard output or a
/// closure you give it (so it can feed any logging system without StateKit depending on one).
///
/// ```swift
/// let cart = SyncedState(0, key: "cart") { LoggingSink() }
/// cart.modify(3)
/// // statekit.change key=cart version=1 id=cart#1 at=2025-01-31T09:00:00.000Z old=0 new=3
/// ```
///
/// Values are written with `String(describing:)`, quoted when they contain spaces, quotes or `=`.
///
/// - Note: All operations on `LoggingSink` are thread-safe.
public struct LoggingSink<Value: Sendable>: StateSink {
    /// How the sink is fed; ``SinkPolicy/default`` unless given.
    public let policy: SinkPolicy
    private let label: String
    private let write: @Sendable (String) -> Void

    /// Creates a sink writing lines that start with `label` to `write` (standard output by default).
    ///
    /// - Parameters:
    ///   - label: The first field of every line; default `statekit.change`.
    ///   - policy: Batching, buffering and retries.
    ///   - write: Receives each line, without a trailing newline.
    public init(
        label: String = "statekit.change",
        policy: SinkPolicy = .default,
        write: @escaping @Sendable (String) -> Void = { print($0) }
    ) {
        self.label = label
        self.policy = policy
        self.write = write
    }

    /// Writes one line per change.
    public func send(_ changes: [StateChange<Value>]) async throws {
        for change in changes {
            write(line(for: change))
        }
    }

    /// The line written for `change`.
    public func line(for change: StateChange<Value>) -> String {
        let fields: [(String, String)] = [
            ("key", change.key),
            ("version", String(change.version)),
            ("id", change.idempotencyKey),
            ("at", change.timestamp.formatted(.iso8601.time(includingFractionalSeconds: true).year().month().day())),
            ("old", String(describing: change.oldValue)),
            ("new", String(describing: change.newValue)),
        ]
        return ([label] + fields.map { "\($0)=\(Self.quoted($1))" }).joined(separator: " ")
    }

    private static func quoted(_ text: String) -> String {
        guard text.isEmpty || text.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }) else {
            return text
        }
        let escaped =
            text
            .replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
        return "\"\(escaped)\""
    }
}
