// Members that Combine, swift-sharing and Observation users reach for on a projection, declared
// unavailable with a message that names what to write instead; `MonitoredState+Habits.swift` says
// why and does the same for containers. `MutableObserved` inherits them, so each message covers
// both kinds of projection.

extension Observed {
    // MARK: Combine

    /// Combine's `sink(receiveValue:)`; StateKit's is ``subscribe(_:)``.
    @available(
        *, unavailable,
        message: """
            projections are not Combine publishers: use subscribe(_:), which calls its handler with the \
            current value, then with each new one (or `for await value in projection.values`)
            """
    )
    public func sink(receiveValue: @escaping (Value) -> Void) -> Subscription { fatalError("unavailable") }

    /// Combine's `sink(receiveCompletion:receiveValue:)`; StateKit's is ``subscribe(_:)``.
    @available(
        *, unavailable,
        message: """
            projections never complete or fail: use subscribe(_:), which calls its handler with the \
            current value, then with each new one
            """
    )
    public func sink(
        receiveCompletion: @escaping (Any) -> Void,
        receiveValue: @escaping (Value) -> Void
    ) -> Subscription { fatalError("unavailable") }

    /// Combine's `assign(to:on:)`; StateKit's is a ``subscribe(_:)`` handler that sets the property,
    /// or `<~` into a container.
    @available(
        *, unavailable,
        message: """
            use subscribe(_:) and set the property in its handler \
            (`part.subscribe { [weak model] in model?.title = $0 }`), or bind a container with `target <~ part`
            """
    )
    public func assign<Root: AnyObject>(
        to keyPath: ReferenceWritableKeyPath<Root, Value>,
        on object: Root
    ) -> Subscription { fatalError("unavailable") }

    /// Combine's `assign(to:)`; StateKit's is a ``subscribe(_:)`` handler that sets the property,
    /// or `<~` into a container.
    @available(
        *, unavailable,
        message: """
            use subscribe(_:) and set the property in its handler \
            (`part.subscribe { [weak model] in model?.title = $0 }`), or bind a container with `target <~ part`
            """
    )
    public func assign<Target>(to target: inout Target) { fatalError("unavailable") }

    /// Combine's `removeDuplicates()`; a projection already notifies only when its part changed.
    @available(
        *, unavailable,
        message: """
            a projection already notifies only when its part changed (==); for your own equality use \
            removingDuplicates(by:)
            """
    )
    public func removeDuplicates() -> Observed<Value> { fatalError("unavailable") }

    /// Combine's `removeDuplicates(by:)`; StateKit's is ``removingDuplicates(by:)``.
    @available(*, unavailable, renamed: "removingDuplicates(by:)")
    public func removeDuplicates(
        by isDuplicate: @escaping @Sendable (Value, Value) -> Bool
    ) -> Observed<Value> { fatalError("unavailable") }

    /// Combine's `eraseToAnyPublisher()`; a projection can be handed out as it is.
    @available(
        *, unavailable,
        message: """
            hand out the projection itself, or `projection.readOnly` for one that cannot be written \
            (both are Observed), or `projection.values` (an AsyncSequence)
            """
    )
    public func eraseToAnyPublisher() -> Observed<Value> { fatalError("unavailable") }

    /// Combine's `receive(on:)`; StateKit's are ``subscribe(on:_:)`` and ``subscribeOnMain(_:)``.
    @available(
        *, unavailable,
        message: """
            use subscribe(on: queue) { … } to be called on a queue, or subscribeOnMain { … } to be called \
            on the main actor
            """
    )
    public func receive<Scheduler>(on scheduler: Scheduler) -> Self { fatalError("unavailable") }

    /// Combine's `dropFirst()`; StateKit's is ``subscribeChanges(_:)``, which starts with the next
    /// change.
    @available(
        *, unavailable,
        message: """
            use subscribeChanges(_:), which starts with the next change (subscribe(_:) starts with the \
            current value)
            """
    )
    public func dropFirst(_ count: Int = 1) -> Self { fatalError("unavailable") }

    /// Combine's `debounce(for:scheduler:)`; StateKit debounces ``values`` with
    /// swift-async-algorithms.
    @available(
        *, unavailable,
        message: """
            debounce the AsyncSequence `projection.values` instead: `for await value in \
            projection.values.debounce(for: .milliseconds(300))` with swift-async-algorithms (see the Recipes article)
            """
    )
    public func debounce<Scheduler>(for dueTime: Duration, scheduler: Scheduler) -> Self {
        fatalError("unavailable")
    }

    /// Combine's `throttle(for:scheduler:latest:)`; StateKit throttles ``values`` with
    /// swift-async-algorithms.
    @available(
        *, unavailable,
        message: """
            throttle the AsyncSequence `projection.values` instead: `projection.values.throttle(for: .seconds(1))` with \
            swift-async-algorithms (and `projection.values` already skips to the newest value for a slow consumer)
            """
    )
    public func throttle<Scheduler>(for interval: Duration, scheduler: Scheduler, latest: Bool) -> Self {
        fatalError("unavailable")
    }

    /// `CurrentValueSubject.send(_:)`; a writable projection's is ``MutableObserved/modify(_:)-4j3hk``
    /// or `~>`.
    @available(
        *, unavailable,
        message: """
            write a projection with modify(_:) or `state.part ~> newValue`, or modify { $0 += 1 } to \
            derive from the current value atomically (a read-only Observed cannot be written)
            """
    )
    public func send(_ value: Value) { fatalError("unavailable") }

    /// The `publisher` of swift-sharing's `Shared`; StateKit's are ``subscribe(_:)`` and
    /// ``values``.
    @available(
        *, unavailable,
        message: """
            projections are not Combine publishers and have no publisher: subscribe(_:) to the projection \
            itself, or `for await value in projection.values`
            """
    )
    public var publisher: Observed<Value> { fatalError("unavailable") }

    // MARK: swift-sharing

    /// swift-sharing's `withLock(_:)`; a writable projection's is
    /// ``MutableObserved/modify(_:)-4j3hk``.
    @available(
        *, unavailable,
        message: """
            use modify { $0 += 1 }: the same atomic read-modify-write of the part, as one change of its \
            container (a read-only Observed cannot be written)
            """
    )
    public func withLock<Result>(_ operation: (inout Value) throws -> Result) rethrows -> Result {
        fatalError("unavailable")
    }

    /// swift-sharing's `load()`; a projection's container loads by itself.
    @available(
        *, unavailable,
        message: """
            a projection shows its container's value: a PersistedState or UserDefaultsState loads by itself, \
            and a SyncedState pulls from its sinks with refresh()
            """
    )
    public func load() { fatalError("unavailable") }

    /// swift-sharing's `save()`; a projection's container saves by itself.
    @available(
        *, unavailable,
        message: """
            a projection's writes are changes of its container, which saves them by itself: call flush() on \
            the PersistedState, UserDefaultsState or SyncedState to wait until they are stored
            """
    )
    public func save() { fatalError("unavailable") }

    // MARK: The Composable Architecture

    /// TCA's `store.scope(state:action:)`; StateKit's is a projection of the part.
    @available(
        *, unavailable,
        message: """
            StateKit has no stores of actions: a part of a projection is the projection `projection.child` \
            (or `projection.observe(\\.child)`), which you read, subscribe to, and write with `~>` when it is \
            writable
            """
    )
    public func scope<Child, ChildAction, Action>(
        state: KeyPath<Value, Child>, action: (ChildAction) -> Action
    ) -> Observed<Child> {
        fatalError("unavailable")
    }

    /// TCA's `store.scope(state:action:)` with a case key path; StateKit's is a projection of the part.
    @available(
        *, unavailable,
        message: """
            StateKit has no stores of actions: a part of a projection is the projection `projection.child` \
            (or `projection.observe(\\.child)`), which you read, subscribe to, and write with `~>` when it is \
            writable
            """
    )
    public func scope<Child, ActionPart>(state: KeyPath<Value, Child>, action: KeyPath<Value, ActionPart>)
        -> Observed<Child>
    {
        fatalError("unavailable")
    }

    // MARK: Member syntax

    /// Member syntax for a name that is not a member of the projection nor an `Equatable` property
    /// of its value: a misspelling.
    @available(
        *, unavailable,
        message: """
            neither a member of this projection nor an Equatable property of its value: check the spelling; \
            a projection has value, subscribe, observe, values, changes (and modify when it is writable), \
            and `projection.part` projects an Equatable part of its value. A projection has no `$value`: \
            subscribe(_:) to it or read `projection.values`
            """
    )
    public subscript(dynamicMember member: String) -> UnknownMember<Value> { fatalError("unavailable") }

    /// Member syntax used as the part itself, for a read-only part or projection.
    @available(
        *, unavailable,
        message: """
            `projection.part` of a read-only part or projection is an Observed projection, not the part, \
            and cannot be written: read it with `projection.part.value`, or subscribe(_:) to it
            """
    )
    public subscript<Part: Equatable>(dynamicMember path: KeyPath<Value, Part>) -> Part {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }
}

extension MutableObserved {
    /// Member syntax used as the part itself, as with `@Bindable` (`model.$settings.theme = .dark`).
    @available(
        *, unavailable,
        message: """
            `state.part` is a projection (MutableObserved), not the part: write it with \
            `state.part ~> newValue` or `state.part.modify { $0 += 1 }`, read it with `state.part.value`
            """
    )
    public subscript<Part: Equatable>(dynamicMember path: WritableKeyPath<Value, Part>) -> Part {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }
}
