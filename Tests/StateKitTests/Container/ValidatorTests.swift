import Foundation
import StateKit
import Testing

/// The slides' enum state machine, whose `toLoading` used `fatalError` on a wrong transition.
enum Screen: Equatable, Sendable {
    case idle, loading, loaded([String]), failed(String)

    struct InvalidTransition: Error, CustomStringConvertible {
        let from: Screen
        let to: Screen
        var description: String { "cannot go from \(from) to \(to)" }
    }

    func canMove(to next: Screen) -> Bool {
        switch (self, next) {
        case (.idle, .loading), (.loading, .loaded), (.loading, .failed), (.loaded, .loading), (.failed, .loading):
            true
        default:
            false
        }
    }
}

@Suite struct ValidatorTests {
    func makeScreen() -> MonitoredState<Screen> {
        MonitoredState(.idle, key: uniqueKey("screen")) { current, proposed in
            guard current.canMove(to: proposed) else { throw Screen.InvalidTransition(from: current, to: proposed) }
        }
    }

    @Test func rejectedSetThrowsDescriptiveErrorAndKeepsValueAndVersion() throws {
        let screen = makeScreen()
        try screen.set(.loading)
        #expect(screen.version == 1)
        let error = #expect(throws: RejectedWriteError.self) { try screen.set(.idle) }
        #expect(error?.key == screen.key)
        #expect(error?.description.contains("cannot go from loading to idle") == true)
        #expect(screen.value == .loading)
        #expect(screen.version == 1)
    }

    @Test func rejectedUpdateKeepsValueAndNotifiesNobody() throws {
        let screen = makeScreen()
        let seen = Collector<Screen>()
        let subscription = screen.subscribe { seen.append($0) }
        #expect(throws: RejectedWriteError.self) { try screen.update { $0 = .loaded([]) } }
        #expect(screen.value == .idle)
        #expect(seen.all == [.idle])
        try screen.update { $0 = .loading }
        #expect(seen.all == [.idle, .loading])
        subscription.cancel()
    }

    @Test func rejectedOperatorWriteIsReportedAsDiagnostic() {
        DiagnosticsRecorder.start()
        let screen = makeScreen()
        screen ~> .loaded(["x"])
        screen.modify { $0 = .failed("no") }
        #expect(screen.value == .idle)
        #expect(screen.version == 0)
        let reports = DiagnosticsRecorder.diagnostics(involving: screen.key)
        #expect(reports.map(\.kind) == [.rejectedWrite, .rejectedWrite])
        #expect(reports.first?.error is Screen.InvalidTransition)
    }

    @Test func validatorGuardsWritesThroughProjections() {
        struct Account: Equatable, Sendable {
            var balance = 0
        }
        struct Overdrawn: Error {}
        let account = MonitoredState(Account(), key: uniqueKey()) { _, proposed in
            if proposed.balance < 0 { throw Overdrawn() }
        }
        account.balance ~> 10
        #expect(throws: RejectedWriteError.self) { try account.balance.set(-5) }
        account.balance.modify { $0 -= 20 }
        #expect(account.value.balance == 10)
        #expect(account.version == 1)
    }
}
