//: # The slides' five problems, and StateKit's answers
import StateKit

struct Process: Equatable, Sendable {
    var name: String
    var isEntered = false
}

enum ProcessState: Equatable, Sendable {
    case idle
    case loading
    case loaded([Process])
    case error(String)

    var processes: [Process]? {
        guard case .loaded(let processes) = self else { return nil }
        return processes
    }
}

struct WrongTransition: Error {
    let from: ProcessState
    let to: ProcessState
}

//: The slides' `toLoading()` calls `fatalError` on a wrong transition. A validator refuses it
//: instead: the write throws (or is reported), and the state stays as it was.
let store = MonitoredState(ProcessState.idle, key: "processes") { current, proposed in
    if current == .idle, proposed != .loading { throw WrongTransition(from: current, to: proposed) }
}

//: ## 1. "Not being able to subscribe to specific parts of the state"
//: Project a key path; it notifies only when its part changes.
let processes = store.processes.subscribe { print("processes: \($0?.map(\.name) ?? [])") }
store ~> .loading
store ~> .loaded([Process(name: "payroll")])

//: ## 2. "Not persistent data structures"
//: Values are immutable snapshots; a change subscriber gets old and new, with a version.
let history = store.subscribeChanges { print("v\($0.version): \($0.oldValue) -> \($0.newValue)") }
store ~> .loaded([Process(name: "payroll"), Process(name: "hiring")])
history.cancel()

//: ## 3. "No guarantee only subclasses can change the state"
//: Hand out `readOnly`: an `Observed` value with `value` and `subscribe`, and no way to write.
let publicState: Observed<ProcessState> = store.readOnly
print(publicState.value == store.value)  // true

//: ## 4. "Mutating can be cumbersome with big trees and sum types"
//: `modify { }` edits in place, atomically, as one change; a validator guards transitions.
store.modify { state in
    guard case .loaded(var list) = state else { return }
    list[0].isEntered = true
    state = .loaded(list)
}
do {
    try MonitoredState(ProcessState.idle, key: "fresh") { current, proposed in
        if current == .idle, proposed != .loading { throw WrongTransition(from: current, to: proposed) }
    }.set(.error("too early"))
} catch {
    print("refused: \(error)")
}

//: ## 5. "Stores interdependencies can lead to infinite loops"
//: Two containers that keep updating each other are stopped with a diagnostic naming both.
StateDiagnostics.maximumChainDepth = 100
StateDiagnostics.handler = { print("diagnostic: \($0.kind), keys \($0.keys)") }
let ping = MonitoredState(0, key: "ping")
let pong = MonitoredState(0, key: "pong")
let forward = ping.subscribe { pong ~> ($0 + 1) }
let backward = pong.subscribe { ping ~> ($0 + 1) }
ping ~> 1
print("ping \(ping.value), pong \(pong.value): stopped, and both still work")
