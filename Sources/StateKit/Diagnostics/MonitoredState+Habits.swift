// Members that users of Combine, swift-sharing and Observation reach for, declared unavailable
// with a message that names what to write instead; and the same for member syntax gone wrong.
//
// Without them, dynamic member lookup takes any unknown name for a part of the value:
// `state.sink { }` fails with "cannot call value of non-function type 'Observed<Part>'", which
// names neither the mistake nor the fix. A declared member, even an unavailable one, is found
// before dynamic member lookup is tried. Two kinds of unavailable `subscript(dynamicMember:)`
// catch the rest: one taking a `String`, for a name that is no part at all (a misspelling; it
// returns an `UnknownMember`, which accepts any call and member, so that the expression
// type-checks and this message is the one reported), and ones returning the part itself, for a
// projection used as its value (`@Bindable`'s `model.$settings.theme = .dark`). The compiler ranks
// a reading that uses an unavailable declaration below any reading that does not, so none of
// this changes what valid code means: a message appears only where nothing valid was found.
// Measured on the test target, type-checking time is unchanged (expressions over 10 ms: 6.7 s in
// all, against 7.0 s without). `Scripts/check-compile-fails.sh` checks every message against the
// habits in `Scripts/compile-fails/`.

extension MonitoredState {
    // MARK: Combine

    /// Combine's `sink(receiveValue:)`; StateKit's is ``subscribe(_:)``.
    @available(
        *, unavailable,
        message: """
            StateKit containers are not Combine publishers: use subscribe(_:), which calls its handler with \
            the current value, then with each new one (or `for await value in state.values`)
            """
    )
    public func sink(receiveValue: @escaping (Value) -> Void) -> Subscription { fatalError("unavailable") }

    /// Combine's `sink(receiveCompletion:receiveValue:)`; StateKit's is ``subscribe(_:)``.
    @available(
        *, unavailable,
        message: """
            StateKit containers never complete or fail: use subscribe(_:), which calls its handler with \
            the current value, then with each new one
            """
    )
    public func sink(
        receiveCompletion: @escaping (Any) -> Void,
        receiveValue: @escaping (Value) -> Void
    ) -> Subscription { fatalError("unavailable") }

    /// Combine's `assign(to:on:)`; StateKit's is a ``subscribe(_:)`` handler that sets the property,
    /// or `<~` between containers.
    @available(
        *, unavailable,
        message: """
            use subscribe(_:) and set the property in its handler \
            (`state.subscribe { [weak model] in model?.title = $0 }`), or bind a container with `target <~ state`
            """
    )
    public func assign<Root: AnyObject>(
        to keyPath: ReferenceWritableKeyPath<Root, Value>,
        on object: Root
    ) -> Subscription { fatalError("unavailable") }

    /// Combine's `assign(to:)`; StateKit's is a ``subscribe(_:)`` handler that sets the property,
    /// or `<~` between containers.
    @available(
        *, unavailable,
        message: """
            use subscribe(_:) and set the property in its handler \
            (`state.subscribe { [weak model] in model?.title = $0 }`), or bind a container with `target <~ state`
            """
    )
    public func assign<Target>(to target: inout Target) { fatalError("unavailable") }

    /// Combine's `removeDuplicates()`; a container already skips equal values.
    @available(
        *, unavailable,
        message: """
            a container already skips equal values (assigning an equal value is no change), and \
            `state.part` notifies only when that part changed; for your own equality use removingDuplicates(by:)
            """
    )
    public func removeDuplicates() -> Observed<Value> { fatalError("unavailable") }

    /// Combine's `removeDuplicates(by:)`; StateKit's is ``removingDuplicates(by:)``.
    @available(*, unavailable, renamed: "removingDuplicates(by:)")
    public func removeDuplicates(
        by isDuplicate: @escaping @Sendable (Value, Value) -> Bool
    ) -> Observed<Value> { fatalError("unavailable") }

    /// Combine's `eraseToAnyPublisher()`; StateKit hands out ``readOnly`` or ``values``.
    @available(
        *, unavailable,
        message: """
            hand out `state.readOnly` (an Observed: it can be watched, not written) or `state.values` \
            (an AsyncSequence)
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
            debounce the AsyncSequence `state.values` instead: `for await value in \
            state.values.debounce(for: .milliseconds(300))` with swift-async-algorithms (see the Recipes article)
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
            throttle the AsyncSequence `state.values` instead: `state.values.throttle(for: .seconds(1))` with \
            swift-async-algorithms (and `state.values` already skips to the newest value for a slow consumer)
            """
    )
    public func throttle<Scheduler>(for interval: Duration, scheduler: Scheduler, latest: Bool) -> Self {
        fatalError("unavailable")
    }

    /// `CurrentValueSubject.send(_:)`; StateKit's is ``State/modify(_:)-5lmnc`` or `~>`.
    @available(
        *, unavailable,
        message: """
            use modify(_:) or `state ~> newValue` to write, or modify { $0 += 1 } to derive from the \
            current value atomically
            """
    )
    public func send(_ value: Value) { fatalError("unavailable") }

    /// The `publisher` of swift-sharing's `Shared` (and the habit of `@Published`'s `$property`);
    /// StateKit's are ``subscribe(_:)`` and ``values``.
    @available(
        *, unavailable,
        message: """
            StateKit containers are not Combine publishers and have no publisher: subscribe(_:) to the \
            container itself, or `for await value in state.values`; `$property` of @Stateful is already the container
            """
    )
    public var publisher: Observed<Value> { fatalError("unavailable") }

    // MARK: swift-sharing

    /// swift-sharing's `withLock(_:)`; StateKit's is ``State/modify(_:)-5lmnc``.
    @available(
        *, unavailable,
        message: """
            use modify { $0 += 1 }: the same atomic read-modify-write under the container's lock, as one \
            change (or `state ~> { $0 += 1 }`)
            """
    )
    public func withLock<Result>(_ operation: (inout Value) throws -> Result) rethrows -> Result {
        fatalError("unavailable")
    }

    /// swift-sharing's `load()`; a persisted container loads by itself.
    @available(
        *, unavailable,
        message: """
            a PersistedState or UserDefaultsState loads its stored value when it is created and picks up \
            changes made outside by itself; a SyncedState pulls from its sinks with refresh()
            """
    )
    public func load() { fatalError("unavailable") }

    /// swift-sharing's `load(_:)`, which moves a value to another key; a container's key and
    /// storage are fixed.
    @available(
        *, unavailable,
        message: """
            a container's key and storage are fixed: create another container, \
            PersistedState(_:key:storage:), for another key or storage
            """
    )
    public func load(_ storage: any StateStorage) { fatalError("unavailable") }

    /// swift-sharing's `save()`; a persisted container saves every change by itself.
    @available(
        *, unavailable,
        message: """
            StateKit saves every change by itself: call flush() on a PersistedState, UserDefaultsState \
            or SyncedState to wait until it is stored
            """
    )
    public func save() { fatalError("unavailable") }

    // MARK: The Composable Architecture

    /// TCA's `store.scope(state:action:)`; StateKit's is a projection of the part.
    @available(
        *, unavailable,
        message: """
            StateKit has no stores of actions: a part of a container is the projection `state.child` (or \
            `state.observe(\\.child)`), which you read, subscribe to, and write with `state.child ~> value` or \
            `state.child.modify { ... }`
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
            StateKit has no stores of actions: a part of a container is the projection `state.child` (or \
            `state.observe(\\.child)`), which you read, subscribe to, and write with `state.child ~> value` or \
            `state.child.modify { ... }`
            """
    )
    public func scope<Child, ActionPart>(state: KeyPath<Value, Child>, action: KeyPath<Value, ActionPart>)
        -> Observed<Child>
    {
        fatalError("unavailable")
    }

    // MARK: Member syntax

    /// Member syntax for a name that is not a member of the container nor an `Equatable` property
    /// of its value: a misspelling.
    @available(
        *, unavailable,
        message: """
            neither a member of this container nor an Equatable property of its value: check the spelling; \
            a container has value, modify, subscribe, observe, values, changes (and flush() when it persists \
            or syncs), and `state.part` projects an Equatable part of its value. A container has no `$value`: \
            it is what `$property` of @Stateful gives, so subscribe(_:) to it or read `state.values`
            """
    )
    public subscript(dynamicMember member: String) -> UnknownMember<Value> { fatalError("unavailable") }

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

    /// Member syntax used as the part itself, for a read-only part.
    @available(
        *, unavailable,
        message: """
            `state.part` of a read-only part is an Observed projection, not the part, and cannot be \
            written: read it with `state.part.value`, or subscribe(_:) to it
            """
    )
    public subscript<Part: Equatable>(dynamicMember path: KeyPath<Value, Part>) -> Part {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }
}
