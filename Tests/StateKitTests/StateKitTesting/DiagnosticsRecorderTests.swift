import Foundation
import StateKit
import StateKitTesting
import Testing

private struct Refused: Error {}

@Suite struct DiagnosticsRecorderTests {
    @Test func recordsOnlyTheDiagnosticsOfItsKey() {
        let key = uniqueKey()
        let other = uniqueKey("other")
        let recorder = StateKitTesting.DiagnosticsRecorder(involving: key)
        let guarded = MonitoredState(1, key: key) { _, _ in throw Refused() }
        let unrelated = MonitoredState(1, key: other) { _, _ in throw Refused() }
        guarded ~> 2
        unrelated ~> 2
        #expect(recorder.diagnostics.map(\.kind) == [.rejectedWrite])
        #expect(recorder.diagnostics.map(\.keys) == [[key]])
    }

    @Test func twoRecordersBothSeeADiagnostic() {
        let key = uniqueKey()
        let first = StateKitTesting.DiagnosticsRecorder(involving: key)
        let second = StateKitTesting.DiagnosticsRecorder()
        let guarded = MonitoredState(1, key: key) { _, _ in throw Refused() }
        guarded ~> 2
        #expect(first.diagnostics.count == 1)
        #expect(second.diagnostics(involving: key).count == 1)
    }

    @Test func fanOutDoesNotKeepARecorderAlive() {
        let key = uniqueKey()
        let guarded = MonitoredState(1, key: key) { _, _ in throw Refused() }
        weak var released: StateKitTesting.DiagnosticsRecorder?
        do {
            let recorder = StateKitTesting.DiagnosticsRecorder(involving: key)
            released = recorder
            guarded ~> 2
            #expect(recorder.diagnostics.count == 1)
        }
        #expect(released == nil)
        let later = StateKitTesting.DiagnosticsRecorder(involving: key)
        guarded ~> 3
        #expect(later.diagnostics.count == 1)
    }

    @Test func nextWaitsForADiagnosticFromAnotherThread() async throws {
        let key = uniqueKey()
        let recorder = StateKitTesting.DiagnosticsRecorder(involving: key)
        let guarded = MonitoredState(1, key: key) { _, _ in throw Refused() }
        Task.detached { guarded ~> 2 }
        let diagnostics = try await recorder.next(1)
        #expect(diagnostics.first?.kind == .rejectedWrite)
        #expect(diagnostics.first?.error is Refused)
    }
}
