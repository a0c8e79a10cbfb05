import Foundation
import StateKit

/// Captures every diagnostic the test process reports, so parallel tests can each look for the
/// ones naming their own (unique) keys without replacing the global handler under each other.
enum DiagnosticsRecorder {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var recorded: [StateDiagnostic] = []
    private static let installation: Void = {
        StateDiagnostics.handler = { diagnostic in
            lock.withLock { recorded.append(diagnostic) }
        }
    }()

    /// Installs the recording handler (once per process).
    static func start() {
        installation
    }

    /// The diagnostics so far that name `key`.
    static func diagnostics(involving key: String) -> [StateDiagnostic] {
        lock.withLock { recorded.filter { $0.keys.contains(key) } }
    }
}

/// A key no other test uses.
func uniqueKey(_ name: String = #function) -> String {
    "\(name.prefix { $0 != "(" })-\(UUID().uuidString.prefix(8))"
}
