import Dispatch

/// An object told about changes of the ``MonitoredState`` containers it is attached to.
///
/// The seed article's listener: the container holds it weakly, so it needs no detaching, and
/// calls ``stateModified(_:)`` asynchronously on ``stateListenerQueue`` (the main queue unless the
/// listener says otherwise) after each change.
///
/// ```swift
/// extension LocationViewController: StateListener {
///     func stateModified<T>(_ state: State<T>) {
///         if state === deviceLocation { updateMapForCurrentLocation() }
///     }
/// }
/// deviceLocation.attach(listener: viewController)
/// ```
///
/// The call is asynchronous, so `state.value` read inside it may already be newer than the
/// change that scheduled it. To be handed each value, use ``MonitoredState/subscribe(_:)``.
public protocol StateListener: AnyObject {
    /// Called after `state` changed, on ``stateListenerQueue``.
    func stateModified<T>(_ state: State<T>)

    /// The queue ``stateModified(_:)`` is called on. Defaults to the main queue.
    var stateListenerQueue: DispatchQueue { get }
}

extension StateListener {
    /// The main queue.
    public var stateListenerQueue: DispatchQueue {
        .main
    }
}
