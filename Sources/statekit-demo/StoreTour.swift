import Dispatch
import StateKit

/// The slides' store pattern: an enum domain state, a view state derived from it, and render.
enum StoreDemo {
    enum ProcessState: Sendable, Equatable {
        case idle
        case loading
        case loaded([String])
        case failed(String)

        /// A query, as the slides write them.
        var processes: [String]? {
            guard case .loaded(let processes) = self else { return nil }
            return processes
        }

        /// The slides' `fatalError("Wrong state transition")`, as a check a validator can throw from:
        /// results only come after a load started.
        func canMove(to next: ProcessState) -> Bool {
            self != .idle || next == .loading
        }
    }

    struct WrongTransition: Error, CustomStringConvertible {
        let from: ProcessState
        let to: ProcessState
        var description: String { "wrong state transition from \(from) to \(to)" }
    }

    /// What the view renders: derived from the domain state, equal when nothing visible changed.
    enum ViewState: Sendable, Equatable {
        case spinner
        case list(count: Int)
        case error(String)

        init(_ domain: ProcessState) {
            switch domain {
            case .idle, .loading: self = .spinner
            case .loaded(let processes): self = .list(count: processes.count)
            case .failed(let message): self = .error(message)
            }
        }
    }
}

let storeSection = TourSection(name: "store", summary: "the slides' store pattern and its five problems") {
    let store = MonitoredState(StoreDemo.ProcessState.idle, key: "processStore") { current, proposed in
        guard current.canMove(to: proposed) else { throw StoreDemo.WrongTransition(from: current, to: proposed) }
    }
    let viewState = MonitoredState(StoreDemo.ViewState.spinner, key: "processListView")
    let mapping = store.subscribe { viewState ~> StoreDemo.ViewState($0) }

    // An app renders with `subscribeOnMain`; a command-line tool has no main run loop, so a
    // serial queue stands in for the main queue here.
    let renderQueue = DispatchQueue(label: "demo.render")
    let rendering = viewState.subscribe(on: renderQueue) { print("   render \($0)") }

    print("-- subscribe, dedupe, render")
    store ~> .loading
    store ~> .loaded(["onboarding", "payroll"])
    store ~> .loaded(["payroll", "onboarding"])
    renderQueue.sync {}
    print("   the reordered list has the same view state: rendered once")

    print("-- problem 1: subscribing to specific parts of the state")
    let processes = store.processes.subscribe { print("   processes: \($0 ?? [])") }
    store ~> .failed("offline")
    renderQueue.sync {}

    print("-- problem 2: not persistent data structures")
    let history = store.subscribeChanges { print("   change v\($0.version): \($0.oldValue) -> \($0.newValue)") }
    store ~> .idle
    history.cancel()
    renderQueue.sync {}
    print("   values are immutable snapshots; every change carries old and new")

    print("-- problem 3: no guarantee only the store changes the state")
    let readOnly: Observed<StoreDemo.ProcessState> = store.readOnly
    print("   hand views `store.readOnly` (\(readOnly.value)): it has no modify, so they cannot write")

    print("-- problem 4: mutating big trees and sum types is cumbersome")
    do {
        try store.set(.loaded(["hiring"]))
    } catch {
        print("   a validator guards transitions: \(error)")
    }
    store ~> .loading
    store.modify { state in
        if case .loading = state { state = .loaded(["hiring"]) }
    }
    renderQueue.sync {}
    print("   one atomic modify { } edits the enum in place: \(store.value)")

    print("-- problem 5: stores that update each other can loop forever")
    let previousHandler = StateDiagnostics.handler
    let previousDepth = StateDiagnostics.maximumChainDepth
    StateDiagnostics.handler = { print("   diagnostic: \($0.kind) for \($0.keys.joined(separator: ", "))") }
    StateDiagnostics.maximumChainDepth = 1_000
    let ping = MonitoredState(0, key: "ping")
    let pong = MonitoredState(0, key: "pong")
    let forward = ping.subscribe { pong ~> ($0 + 1) }
    let backward = pong.subscribe { ping ~> ($0 + 1) }
    ping ~> 1
    print("   stopped, not hung: ping = \(ping.value), pong = \(pong.value); both still usable")
    StateDiagnostics.handler = previousHandler
    StateDiagnostics.maximumChainDepth = previousDepth

    for subscription in [mapping, rendering, processes, history, forward, backward] { subscription.cancel() }
}
