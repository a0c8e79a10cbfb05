import Dispatch
import OpenCombine
import StateKit

/// What the scalar scenarios (read, write with N subscribers, churn, bytes per subscription) need
/// of a container holding an `Int`. Generic code over it is specialized, so the calls are direct.
protocol Peer: AnyObject {
    associatedtype Token
    static var name: String { get }
    init()
    var current: Int { get }
    func write(_ value: Int)
    func listen(_ handler: @escaping @Sendable (Int) -> Void) -> Token
    func cancel(_ token: Token)
    /// Waits until the notifications of every write so far were delivered (for asynchronous peers).
    func drain()
}

extension Peer {
    func drain() {}
}

final class StateKitPeer: Peer {
    static let name = "StateKit"
    let state = MonitoredState(0, key: "benchmark.int")
    var current: Int { state.value }
    func write(_ value: Int) { state.modify(value) }
    func listen(_ handler: @escaping @Sendable (Int) -> Void) -> StateKit.Subscription { state.subscribe(handler) }
    func cancel(_ token: StateKit.Subscription) { token.cancel() }
}

final class FloorPeer: Peer {
    static let name = "Floor"
    let floor = Floor(0)
    var current: Int { floor.value }
    func write(_ value: Int) { floor.modify(value) }
    func listen(_ handler: @escaping @Sendable (Int) -> Void) -> Int { floor.subscribe(handler) }
    func cancel(_ token: Int) { floor.cancel(token) }
}

/// Scenarios 6 and 7's bound (see ``TokenFloor``); registered for those two only.
final class TokenFloorPeer: Peer {
    static let name = "Floor"
    let floor = TokenFloor(0)
    var current: Int { floor.value }
    func write(_ value: Int) { floor.modify(value) }
    func listen(_ handler: @escaping @Sendable (Int) -> Void) -> TokenFloor.Token { floor.subscribe(handler) }
    func cancel(_ token: TokenFloor.Token) { token.cancel() }
}

final class SeedPeer: Peer {
    /// A seed listener that hands the new value to a closure, on one serial queue shared by all.
    final class Listener: SeedStateListener {
        let stateListenerQueue: DispatchQueue
        let handler: @Sendable (Int) -> Void

        init(queue: DispatchQueue, handler: @escaping @Sendable (Int) -> Void) {
            self.stateListenerQueue = queue
            self.handler = handler
        }

        func stateModified<T>(_ state: SeedState<T>) {
            if let state = state as? SeedState<Int> { handler(state.value) }
        }
    }

    static let name = "Seed"
    let state = SeedMonitoredState(0, key: "benchmark.int")
    let listenerQueue = DispatchQueue(label: "benchmark.seed.listeners")
    var current: Int { state.value }
    func write(_ value: Int) { state.modify(value) }
    func listen(_ handler: @escaping @Sendable (Int) -> Void) -> Listener {
        let listener = Listener(queue: listenerQueue, handler: handler)
        state.attach(listener: listener)
        return listener
    }
    /// The seed has no detach: a listener leaves when it is released, which the caller does.
    func cancel(_ token: Listener) {}
    func drain() { listenerQueue.sync {} }
}

final class CombinePeer: Peer {
    static let name = "Combine"
    let subject = CurrentValueSubject<Int, Never>(0)
    var current: Int { subject.value }
    func write(_ value: Int) { subject.value = value }
    func listen(_ handler: @escaping @Sendable (Int) -> Void) -> AnyCancellable { subject.sink(receiveValue: handler) }
    func cancel(_ token: AnyCancellable) { token.cancel() }
}

final class ObservationPeer: Peer {
    static let name = "Observation"
    let model = ObservableCounter()
    var current: Int { model.value }
    func write(_ value: Int) { model.value = value }
    func listen(_ handler: @escaping @Sendable (Int) -> Void) -> ObservationTracker<ObservableCounter, Int> {
        ObservationTracker(model, read: { $0.value }, handler: handler)
    }
    func cancel(_ token: ObservationTracker<ObservableCounter, Int>) { token.isCancelled = true }
}
