// Habits on a PersistedState; see MonitoredState.swift.
import Dispatch
import Foundation
import StateKit

enum Theme: String, Codable, Equatable, Sendable { case light, dark }

struct Appearance: Codable, Equatable, Sendable {
    var theme = Theme.light
    var fontScale = 1.0
}

final class SettingsScreen: @unchecked Sendable {
    var theme = Theme.light
}

func habits(screen: SettingsScreen) async throws {
    let appearance = PersistedState(Appearance(), key: "appearance", storage: .inMemory)

    // Combine
    _ = appearance.sink { print($0) }  // error: use subscribe(_:)
    _ = appearance.theme.assign(to: \.theme, on: screen)  // error: use subscribe(_:) and set the property in its handler
    _ = appearance.removeDuplicates()  // error: removingDuplicates(by:)
    _ = appearance.eraseToAnyPublisher()  // error: `state.readOnly`
    _ = appearance.receive(on: DispatchQueue.main).sink { print($0) }  // error: subscribe(on: queue)
    appearance.send(Appearance())  // error: use modify(_:) or `state ~> newValue`

    // swift-sharing
    appearance.withLock { $0.fontScale += 0.1 }  // error: use modify { $0 += 1 }
    try await appearance.load()  // error: loads its stored value when it is created
    appearance.load(.inMemory)  // error: PersistedState(_:key:storage:)
    try await appearance.save()  // error: call flush()

    // Observation
    appearance.theme = .dark  // error: write it with `state.part ~> newValue`

    // Misspelt members
    appearance.flsh()  // error: check the spelling; a container has value, modify, subscribe, observe, values, changes (and flush()
    _ = appearance.subscibe { print($0) }  // error: check the spelling; a container has value, modify, subscribe
}
