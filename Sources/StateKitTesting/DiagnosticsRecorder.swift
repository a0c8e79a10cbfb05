import Foundation
import StateKit

/// Records the ``StateKit/StateDiagnostic``s that StateKit reports, for tests.
///
/// ``StateKit/StateDiagnostics/handler`` is process-wide, and tests run in parallel, so a test
/// should not replace it with a handler of its own. A recorder instead receives the diagnostics
/// reported while it lives that name the key it was given (or all of them), so each test records
/// those of its own (unique) keys:
///
/// ```swift
/// struct GoingBack: Error {}
///
/// let diagnostics = DiagnosticsRecorder(involving: "phase")
/// let phase = MonitoredState(1, key: "phase") { current, proposed in
///     guard proposed > current else { throw GoingBack() }
/// }
/// phase ~> 0
/// #expect(diagnostics.diagnostics.map(\.kind) == [.rejectedWrite])
/// ```
///
/// The first recorder of the process installs a handler that hands each diagnostic to every live
/// recorder and then, unless ``forwardsToPreviousHandler`` is `false`, to the handler that was
/// installed before it (by default, standard error), so nothing is hidden from the test log. A
/// handler set after that replaces it, and recorders then see nothing.
///
/// - Note: All operations on `DiagnosticsRecorder` are thread-safe.
public final class DiagnosticsRecorder: Sendable {
    /// The key a diagnostic must name to be recorded, or `nil` to record every diagnostic.
    public let key: String?
    private let log = RecordLog<StateDiagnostic>()

    /// Starts recording the diagnostics reported from now on, from any thread.
    ///
    /// - Parameter key: Record only diagnostics whose ``StateKit/StateDiagnostic/keys`` include
    ///   this key; `nil` records them all.
    public init(involving key: String? = nil) {
        self.key = key
        let log = self.log
        DiagnosticsFanOut.shared.add(ObjectIdentifier(log)) { diagnostic in
            if key == nil || diagnostic.keys.contains(where: { $0 == key }) { log.append(diagnostic) }
        }
    }

    deinit {
        DiagnosticsFanOut.shared.remove(ObjectIdentifier(log))
    }

    /// Whether diagnostics also go to the handler that the first recorder replaced (by default,
    /// standard error). `true` unless set; set it to `false` to keep a test log free of
    /// diagnostics that tests provoke on purpose.
    public static var forwardsToPreviousHandler: Bool {
        get { DiagnosticsFanOut.shared.forwards }
        set { DiagnosticsFanOut.shared.forwards = newValue }
    }

    /// Every diagnostic recorded so far, in order.
    public var diagnostics: [StateDiagnostic] {
        log.all
    }

    /// The diagnostics recorded so far whose ``StateKit/StateDiagnostic/keys`` include `key`.
    public func diagnostics(involving key: String) -> [StateDiagnostic] {
        log.all.filter { $0.keys.contains(key) }
    }

    /// Waits for the next `count` recorded diagnostics, in order, and returns them.
    ///
    /// Each call continues where the previous one stopped; the first starts with the first
    /// diagnostic recorded. For diagnostics reported on another thread, such as a sink giving up.
    ///
    /// - Throws: ``RecordingTimeoutError`` naming the key and what did arrive if they have not all
    ///   arrived within `timeout`; `CancellationError` if the task is cancelled.
    public func next(_ count: Int = 1, timeout: Duration = .seconds(5)) async throws -> [StateDiagnostic] {
        let key = self.key
        return try await log.next(count, timeout: timeout) { unread, all in
            RecordingTimeoutError(
                key: key ?? "(any key)",
                expectedCount: count,
                timeout: timeout,
                received: unread.map(\.description),
                recorded: all.map(\.description),
                elementName: "diagnostics"
            )
        }
    }
}

/// The one handler that feeds every live ``DiagnosticsRecorder``, then the handler it replaced.
final class DiagnosticsFanOut: Sendable {
    private struct Recorders {
        var byID: [ObjectIdentifier: @Sendable (StateDiagnostic) -> Void] = [:]
        var isInstalled = false
        var isForwarding = true
    }

    static let shared = DiagnosticsFanOut()

    private let recorders = LockedBox(Recorders())

    var forwards: Bool {
        get { recorders.withLock { $0.isForwarding } }
        set { recorders.withLock { $0.isForwarding = newValue } }
    }

    func add(_ id: ObjectIdentifier, _ record: @escaping @Sendable (StateDiagnostic) -> Void) {
        let install = recorders.withLock { recorders in
            recorders.byID[id] = record
            defer { recorders.isInstalled = true }
            return !recorders.isInstalled
        }
        guard install else { return }
        let previous = StateDiagnostics.handler
        StateDiagnostics.handler = { [self] diagnostic in
            let (records, forwards) = recorders.withLock { (Array($0.byID.values), $0.isForwarding) }
            for record in records { record(diagnostic) }
            if forwards { previous(diagnostic) }
        }
    }

    func remove(_ id: ObjectIdentifier) {
        recorders.withLock { _ = $0.byID.removeValue(forKey: id) }
    }
}
