import Foundation
import StateKit
import StateKitTesting

/// The test process's one recorder of every diagnostic, so parallel tests can each look for the
/// ones naming their own (unique) keys without replacing the global handler under each other.
/// A thin front for StateKitTesting's public recorder, which users' tests use the same way. The
/// diagnostics that tests provoke on purpose are kept out of the test log.
enum DiagnosticsRecorder {
    private static let shared: StateKitTesting.DiagnosticsRecorder = {
        StateKitTesting.DiagnosticsRecorder.forwardsToPreviousHandler = false
        return StateKitTesting.DiagnosticsRecorder()
    }()

    /// Installs the recording handler (once per process).
    static func start() {
        _ = shared
    }

    /// The diagnostics so far that name `key`.
    static func diagnostics(involving key: String) -> [StateDiagnostic] {
        shared.diagnostics(involving: key)
    }
}

/// A key no other test uses.
func uniqueKey(_ name: String = #function) -> String {
    "\(name.prefix { $0 != "(" })-\(UUID().uuidString.prefix(8))"
}
