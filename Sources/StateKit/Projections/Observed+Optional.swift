/// Optional projections: `tracker.habits[id: "water"].streak`, a projection through a value that
/// may be absent.
///
/// A projection (or container) whose value is optional offers its wrapped type's `Equatable`
/// members as optional projections, the way optional chaining reads them: `nil` while the value
/// is absent, the member's value otherwise. Each fires only when its own part changes, writable
/// where the path is; a member that is itself optional is flattened (`String?`, not `String??`).
///
/// ```swift
/// struct Habit: Identifiable, Equatable, Sendable { var id: String; var streak = 0 }
/// let habits = MonitoredState([Habit(id: "water")], key: "habits")
/// let streak = habits[id: "water"].streak        // MutableObserved<Int?>
/// let subscription = streak.subscribe { print("streak: \($0.map(String.init) ?? "none")") }
/// streak ~> 3                                     // one change of `habits`
/// ```
///
/// Writing through one writes the member of the value that is there. While the value is absent
/// there is no member to write: the write leaves the value as it is, and writing `nil` into a
/// member that is not optional does the same. To create the value, write the whole element
/// (`habits[id: "water"] ~> Habit(id: "water")`).
extension Observed {
    /// `observed.member` of an optional value is an optional projection of the member: `nil`
    /// while the value is absent.
    public subscript<Wrapped, Part: Equatable>(dynamicMember path: KeyPath<Wrapped, Part>) -> Observed<Part?>
    where Value == Wrapped? {
        observe(\.[stateKitMember: path])
    }

    /// `observed.member` of an optional value, for a member that is itself optional: one level
    /// of optional, as optional chaining gives.
    public subscript<Wrapped, Part: Equatable>(dynamicMember path: KeyPath<Wrapped, Part?>) -> Observed<Part?>
    where Value == Wrapped? {
        observe(\.[stateKitOptionalMember: path])
    }
}

extension MutableObserved {
    /// `observed.member` of an optional value is a writable optional projection of the member.
    public subscript<Wrapped, Part: Equatable>(
        dynamicMember path: WritableKeyPath<Wrapped, Part>
    ) -> MutableObserved<Part?> where Value == Wrapped? {
        observe(\.[stateKitWritableMember: path])
    }

    /// `observed.member` of an optional value, for a writable member that is itself optional.
    public subscript<Wrapped, Part: Equatable>(
        dynamicMember path: WritableKeyPath<Wrapped, Part?>
    ) -> MutableObserved<Part?> where Value == Wrapped? {
        observe(\.[stateKitWritableOptionalMember: path])
    }
}

extension MonitoredState {
    /// `state.member` of an optional value is an optional projection of the member (see
    /// ``Observed/subscript(dynamicMember:)-(KeyPath<Wrapped,Part>)``).
    public subscript<Wrapped, Part: Equatable>(dynamicMember path: KeyPath<Wrapped, Part>) -> Observed<Part?>
    where Value == Wrapped? {
        observe(\.[stateKitMember: path])
    }

    /// `state.member` of an optional value, for a member that is itself optional.
    public subscript<Wrapped, Part: Equatable>(dynamicMember path: KeyPath<Wrapped, Part?>) -> Observed<Part?>
    where Value == Wrapped? {
        observe(\.[stateKitOptionalMember: path])
    }

    /// `state.member` of an optional value is a writable optional projection of the member.
    public subscript<Wrapped, Part: Equatable>(
        dynamicMember path: WritableKeyPath<Wrapped, Part>
    ) -> MutableObserved<Part?> where Value == Wrapped? {
        observe(\.[stateKitWritableMember: path])
    }

    /// `state.member` of an optional value, for a writable member that is itself optional.
    public subscript<Wrapped, Part: Equatable>(
        dynamicMember path: WritableKeyPath<Wrapped, Part?>
    ) -> MutableObserved<Part?> where Value == Wrapped? {
        observe(\.[stateKitWritableOptionalMember: path])
    }
}

extension Optional {
    /// The member at `path` of the wrapped value, or `nil` while there is none: what
    /// `value?.member` reads, as a key path component.
    subscript<Part>(stateKitMember path: KeyPath<Wrapped, Part>) -> Part? {
        map { $0[keyPath: path] }
    }

    /// The optional member at `path`, flattened.
    subscript<Part>(stateKitOptionalMember path: KeyPath<Wrapped, Part?>) -> Part? {
        flatMap { $0[keyPath: path] }
    }

    /// The member at `path`; setting writes it into the wrapped value, and does nothing while
    /// there is none or when the new value is `nil`.
    subscript<Part>(stateKitWritableMember path: WritableKeyPath<Wrapped, Part>) -> Part? {
        get { map { $0[keyPath: path] } }
        set {
            guard let newValue, self != nil else { return }
            self![keyPath: path] = newValue
        }
    }

    /// The optional member at `path`, flattened; setting writes it, `nil` included, into the
    /// wrapped value, and does nothing while there is none.
    subscript<Part>(stateKitWritableOptionalMember path: WritableKeyPath<Wrapped, Part?>) -> Part? {
        get { flatMap { $0[keyPath: path] } }
        set {
            guard self != nil else { return }
            self![keyPath: path] = newValue
        }
    }
}
