// Habits on a UserDefaultsState; see MonitoredState.swift.
import Dispatch
import Foundation
import StateKit

final class SettingsScreen: @unchecked Sendable {
    var fontScale = 1.0
}

func habits(screen: SettingsScreen, defaults: UserDefaults) async throws {
    let fontScale = UserDefaultsState(1.0, key: "fontScale", defaults: defaults)

    // Combine
    _ = fontScale.sink { print($0) }  // error: use subscribe(_:)
    _ = fontScale.assign(to: \.fontScale, on: screen)  // error: use subscribe(_:) and set the property in its handler
    _ = fontScale.removeDuplicates()  // error: removingDuplicates(by:)
    _ = fontScale.eraseToAnyPublisher()  // error: `state.readOnly`
    _ = fontScale.receive(on: DispatchQueue.main)  // error: subscribe(on: queue)
    fontScale.send(1.2)  // error: use modify(_:) or `state ~> newValue`

    // swift-sharing
    fontScale.withLock { $0 += 0.1 }  // error: use modify { $0 += 1 }
    try await fontScale.load()  // error: loads its stored value when it is created
    try await fontScale.save()  // error: call flush()

    // Misspelt members
    fontScale.flsh()  // error: check the spelling; a container has value, modify, subscribe, observe, values, changes (and flush()
    _ = fontScale.subscibe { print($0) }  // error: check the spelling; a container has value, modify, subscribe
}
