//: # The store pattern
//:
//: From "iOS Architecture: A State Container based approach": a store owns a domain state, a
//: view model subscribes and derives a view state, equal states are skipped, and the view renders
//: on the main queue. With StateKit each piece is one line.
import Dispatch
import StateKit

enum ProcessStoreState: Equatable, Sendable {
    case idle
    case loading
    case loaded([String])
    case error(String)
}

enum ProcessListViewState: Equatable, Sendable {
    case loading
    case loaded(count: Int)
    case error(String)

    init(domainState: ProcessStoreState) {
        switch domainState {
        case .idle, .loading: self = .loading
        case .loaded(let processes): self = .loaded(count: processes.count)
        case .error(let message): self = .error(message)
        }
    }
}

let store = MonitoredState(ProcessStoreState.idle, key: "processStore")
let viewState = MonitoredState(ProcessListViewState.loading, key: "processListViewState")

//: Subscribe: the view model maps each domain state to a view state.
let mapping = store.subscribe { viewState ~> ProcessListViewState(domainState: $0) }

//: Dedupe: `Equatable` states that compare equal are not changes, so nothing re-renders.
//: Render on main: `subscribeOnMain` hands a main-actor handler each new state.
let rendering = viewState.subscribeOnMain { state in print("render \(state)") }

store ~> .loading  // same view state as .idle: no render
store ~> .loaded(["payroll", "onboarding"])
store ~> .loaded(["onboarding", "payroll"])  // same count: no render
store ~> .error("offline")

//: Let the main queue run the render calls. (In a playground or an app the main run loop does it.)
await withCheckedContinuation { continuation in
    DispatchQueue.main.async { continuation.resume() }
}
// render loading
// render loaded(count: 2)
// render error("offline")
