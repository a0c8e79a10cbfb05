// SwiftUI's `withTransaction`, which users reach for to change several containers at once,
// declared unavailable with a message that names `withStateTransaction`; `MonitoredState+Habits.swift`
// says how such hints work.
//
// SwiftUI declares `withTransaction(_ transaction:_ body:)` and `withTransaction(_ keyPath:_ value:_ body:)`,
// both of which take something before the body; this one takes only the body, which no SwiftUI
// call can mean. The two modules' functions are overloads of one name, neither shadows the other,
// and the compiler ranks a call that uses an unavailable declaration below any that does not: in a
// file that imports SwiftUI and StateKit, every valid SwiftUI call keeps its meaning, and only
// `withTransaction { … }` with nothing before the body reports this message.

/// SwiftUI's `withTransaction(_:_:)`; StateKit's all-or-nothing change of several containers is
/// ``withStateTransaction(_:)``.
@available(
    *, unavailable,
    message: """
        withTransaction is SwiftUI's (it animates a view update): to change several containers all at once, \
        or not at all, use withStateTransaction { … }
        """
)
public func withTransaction<Result>(_ body: () throws -> Result) rethrows -> Result { fatalError("unavailable") }
