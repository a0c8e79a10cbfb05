import Foundation
import Synchronization

/// Something StateKit noticed and could not report by throwing: a cycle it stopped, data it
/// could not decode, a change a sink dropped, a write a validator rejected.
public struct StateDiagnostic: Sendable, CustomStringConvertible {
    /// What kind of problem a diagnostic reports.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// A short, stable name, such as `"cycle"`.
        public let name: String

        /// Creates a kind; StateKit's own kinds are the static members.
        public init(_ name: String) {
            self.name = name
        }

        /// The kind's ``name``.
        public var description: String { name }

        /// Containers kept updating each other; the chain was cut at
        /// ``StateDiagnostics/maximumChainDepth``.
        public static let cycle = Kind("cycle")
        /// A write was refused by a validator; the value stayed as it was.
        public static let rejectedWrite = Kind("rejected-write")
    }

    /// What kind of problem this is.
    public let kind: Kind
    /// The keys of the containers involved.
    public let keys: [String]
    /// What happened, for a person.
    public let message: String
    /// The underlying error, when there is one.
    public let error: (any Error)?

    /// Creates a diagnostic.
    public init(kind: Kind, keys: [String], message: String, error: (any Error)? = nil) {
        self.kind = kind
        self.keys = keys
        self.message = message
        self.error = error
    }

    /// `"StateKit [kind] keys a, b: message"`.
    public var description: String {
        "StateKit [\(kind)] \(keys.count == 1 ? "key" : "keys") \(keys.joined(separator: ", ")): \(message)"
    }
}

/// The global hook that receives every ``StateDiagnostic``, and the limits that produce them.
///
/// Like swift-log's bootstrap, the handler is process-wide; unlike it, it can be replaced at any
/// time, so tests can capture diagnostics and restore the default:
///
/// ```swift
/// StateDiagnostics.handler = { diagnostic in logger.warning("\(diagnostic)") }
/// ```
///
/// - Note: All operations on `StateDiagnostics` are thread-safe.
public enum StateDiagnostics {
    /// The handler in a struct, so that the generic box stores the closure as it is: stored as a
    /// bare function value, each get and set wrapped it in one more reabstraction thunk, and a
    /// handler read and set again thousands of times overflowed the stack when called.
    private struct Handler: Sendable {
        let call: @Sendable (StateDiagnostic) -> Void
    }

    private static let currentHandler = LockedBox(Handler(call: standardError))
    private static let currentMaximumChainDepth = Atomic<Int>(100_000)

    /// Receives every diagnostic. The default prints ``StateDiagnostic/description`` to standard error.
    public static var handler: @Sendable (StateDiagnostic) -> Void {
        get { currentHandler.withLock { $0.call } }
        set { currentHandler.withLock { $0 = Handler(call: newValue) } }
    }

    /// How many handler-triggered writes may follow one another before StateKit calls it a cycle.
    ///
    /// A handler that writes to a container starts a chain; each write made while delivering a
    /// change of the chain lengthens it. Legitimate chains are short (10,000 is fine), so the
    /// default, 100,000, only stops containers that update each other forever. The change that
    /// would exceed the limit is written but not delivered, and a ``StateDiagnostic/Kind/cycle``
    /// diagnostic names the keys of the chain's last steps.
    public static var maximumChainDepth: Int {
        get { currentMaximumChainDepth.load(ordering: .relaxed) }
        set {
            precondition(newValue > 0, "maximumChainDepth must be positive, got \(newValue)")
            currentMaximumChainDepth.store(newValue, ordering: .relaxed)
        }
    }

    /// Sends `diagnostic` to the current handler.
    public static func report(_ diagnostic: StateDiagnostic) {
        handler(diagnostic)
    }

    /// The default handler: one line on standard error.
    @Sendable
    public static func standardError(_ diagnostic: StateDiagnostic) {
        FileHandle.standardError.write(Data((diagnostic.description + "\n").utf8))
    }
}
