import Observation

/// Apple's Observation as a peer: an `@Observable` model watched by re-registering
/// `withObservationTracking` (Observation's trackers fire once, so each one re-arms itself).
///
/// Not generic on purpose: a generic `@Observable` class instantiates its key paths at run time,
/// which costs two allocations per access and would misrepresent Observation.
@Observable
final class ObservableCounter: @unchecked Sendable {
    var value = 0
}

/// One re-registering observer: reads `read` under tracking, and on each change re-arms and calls
/// `handler` with what the re-armed read saw (one evaluation per change, as the other peers do).
///
/// Observation calls `onChange` from `willSet`, so that read sees the old value; Observation hands
/// no new value to a synchronous observer. Setting `isCancelled` stops the re-arming: Observation
/// has no way to remove a registration.
final class ObservationTracker<Model: AnyObject, Part>: @unchecked Sendable {
    private let model: Model
    private let read: (Model) -> Part
    private let handler: (Part) -> Void
    var isCancelled = false

    init(_ model: Model, read: @escaping (Model) -> Part, handler: @escaping (Part) -> Void) {
        self.model = model
        self.read = read
        self.handler = handler
        _ = arm()
    }

    private func arm() -> Part {
        withObservationTracking {
            read(model)
        } onChange: { [self] in
            guard !isCancelled else { return }
            handler(arm())
        }
    }
}
