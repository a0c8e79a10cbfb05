import Dispatch
import Foundation

// The seed article's containers (compiled in Swift 5 mode, as they were written), as /work/shared/seeds/state-containers-in-swift.md has them,
// renamed (`Seed` prefix) so they sit beside StateKit's. Two changes, both forced:
// - `didModify()` does not `print` (the article's placeholder; printing would measure the terminal);
// - `NSHashTable.weakObjects()` does not exist in Foundation on Linux, so listeners are held in an
//   array of weak boxes that drops released entries when a listener is attached.

/// Wraps a piece of state.
class SeedState<Type> {
    /// Unique key used to identify the state across the application.
    let key: String
    /// Holds the state itself.
    fileprivate var _value: Type
    /// Used to synchronize changes to the state value.
    fileprivate let lockQueue: DispatchQueue

    /// Create a state container with the provided `defaultValue`, and associate it with a `key`.
    init(_ defaultValue: Type, key: String) {
        self._value = defaultValue
        self.key = key
        self.lockQueue = DispatchQueue(label: "com.stateContainers.\(key)", attributes: .concurrent)
    }

    /// Invoke this method after manipulating the state.
    func didModify() {}
}

extension SeedState {
    /// The current state value.
    var value: Type {
        var retVal: Type!
        self.lockQueue.sync {
            retVal = self._value
        }
        return retVal
    }

    /// Modifies the receiver by assigning the `newValue`.
    func modify(_ newValue: Type) {
        self.lockQueue.async(flags: .barrier) {
            self._value = newValue
        }
        // Handle the repercussions of the modification
        self.didModify()
    }
}

extension SeedState: @unchecked Sendable {}

extension SeedMonitoredState: @unchecked Sendable {}

protocol SeedStateListener: AnyObject {
    /// Invoked when state is modified.
    func stateModified<T>(_ state: SeedState<T>)
    /// The queue to use when dispatching state modification messages.
    var stateListenerQueue: DispatchQueue { get }
}

/// The article's `MonitoredState`: notifies weakly held listeners on their queues.
class SeedMonitoredState<Type>: SeedState<Type> {
    fileprivate struct WeakListener {
        weak var listener: AnyObject?
    }

    /// Weak references to all the state listeners.
    fileprivate var listeners: [WeakListener] = []
    /// Used to synchronize changes to the listeners.
    fileprivate let listenerLockQueue: DispatchQueue

    /// Create a state container with the provided `defaultValue`, and associate it with a `key`.
    override init(_ defaultValue: Type, key: String) {
        self.listenerLockQueue = DispatchQueue(label: "com.stateContainers.listeners.\(key)", attributes: .concurrent)
        super.init(defaultValue, key: key)
    }

    /// All of the listeners associated with the receiver.
    var allListeners: [SeedStateListener] {
        var retVal: [SeedStateListener] = []
        self.listenerLockQueue.sync {
            retVal = self.listeners.compactMap { $0.listener as? SeedStateListener }
        }
        return retVal
    }

    /// Notifies all listeners that something changed.
    override func didModify() {
        super.didModify()
        let allListeners = self.allListeners
        let state = self
        for l in allListeners {
            l.stateListenerQueue.async {
                l.stateModified(state)
            }
        }
    }

    /// Associate a listener with the receiver's changes.
    func attach(listener: SeedStateListener) {
        self.listenerLockQueue.sync(flags: .barrier) {
            self.listeners.removeAll { $0.listener == nil }
            self.listeners.append(WeakListener(listener: listener))
        }
    }
}

/// Carries a non-`Sendable` reference into a dispatched block, as the article's Swift 3 code did freely.
struct UncheckedBox<Wrapped>: @unchecked Sendable {
    let value: Wrapped
    init(_ value: Wrapped) { self.value = value }
}
