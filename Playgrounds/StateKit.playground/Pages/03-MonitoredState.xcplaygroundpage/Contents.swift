//: # MonitoredState: subscribers and listeners
//:
//: `MonitoredState` tells others about its changes. Closure subscribers get the current value at
//: once, then each new value, synchronously on the writer's thread unless you pick a queue.
import Dispatch
import StateKit

let deviceLocation = MonitoredState<String?>(nil, key: "deviceLocation")

var subscriptions = Set<Subscription>()
deviceLocation.subscribe { print("subscriber: \($0 ?? "unknown")") }.store(in: &subscriptions)
// subscriber: unknown

deviceLocation ~> "Atlanta"  // subscriber: Atlanta

//: The article's `StateListener` still works: held weakly, called on its `stateListenerQueue`
//: (the main queue unless it says otherwise). This one brings its own queue, so the page also
//: runs where no main run loop turns.
final class LocationViewController: StateListener {
    let stateListenerQueue = DispatchQueue(label: "location-view-controller")

    func stateModified<T>(_ state: State<T>) {
        if state === deviceLocation {
            print("listener: centering the map on \(deviceLocation.value ?? "nowhere")")
        }
    }
}

var viewController: LocationViewController? = LocationViewController()
deviceLocation.attach(listener: viewController!)
deviceLocation ~> "Cupertino"
viewController?.stateListenerQueue.sync {}  // wait for the listener's call, for this page's output

//: No need to detach: when the view controller goes away, so does the listener.
viewController = nil
print(deviceLocation.allListeners.count)  // 0

//: Cancelling (or releasing) a subscription token stops it.
subscriptions.removeAll()
deviceLocation ~> "Tokyo"  // nobody prints
