import Foundation
import StateKit
import Testing

/// The diagnostics hook: what a diagnostic says, and that every report reaches the handler once.
@Suite struct StateDiagnosticsTests {
    init() { DiagnosticsRecorder.start() }

    @Test func theDescriptionNamesTheKindAndEveryKey() {
        let one = StateDiagnostic(kind: .keyConflict, keys: ["tracker"], message: "declared twice")
        let two = StateDiagnostic(kind: .cycle, keys: ["a", "b"], message: "a loop")
        #expect(one.description == "StateKit [key-conflict] key tracker: declared twice")
        #expect(two.description == "StateKit [cycle] keys a, b: a loop")
    }

    @Test func reportsFromFourThreadsEachReachTheHandlerOnce() async {
        let key = uniqueKey()
        await onThreads(4) { thread in
            for index in 0..<250 {
                StateDiagnostics.report(
                    StateDiagnostic(kind: .storageFailed, keys: [key], message: "\(thread)-\(index)"))
            }
        }
        let messages = DiagnosticsRecorder.diagnostics(involving: key).map(\.message)
        #expect(messages.count == 1_000)
        #expect(Set(messages).count == 1_000)
    }
}
