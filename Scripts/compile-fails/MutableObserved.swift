// Habits on a writable projection (MutableObserved); see MonitoredState.swift.
import Dispatch
import Foundation
import StateKit

enum Theme: String, Codable, Equatable, Sendable { case light, dark }

struct Appearance: Codable, Equatable, Sendable {
    var theme = Theme.light
    var fontScale = 1.0
    var tags: [String] = []
}

struct Settings: Codable, Equatable, Sendable {
    var appearance = Appearance()
}

final class SettingsScreen: @unchecked Sendable {
    var theme = Theme.light
}

func habits(screen: SettingsScreen) async throws {
    let settings = MonitoredState(Settings(), key: "settings")
    let appearance: MutableObserved<Appearance> = settings.appearance
    let theme: MutableObserved<Theme> = appearance.theme

    // Combine
    _ = theme.sink { print($0) }  // error: use subscribe(_:)
    _ = theme.sink(receiveCompletion: { _ in }, receiveValue: { _ in })  // error: use subscribe(_:)
    _ = theme.assign(to: \.theme, on: screen)  // error: use subscribe(_:) and set the property in its handler
    _ = theme.removeDuplicates()  // error: removingDuplicates(by:)
    _ = appearance.removeDuplicates(by: { $0.theme == $1.theme })  // error: renamed to 'removingDuplicates(by:)'
    _ = theme.eraseToAnyPublisher()  // error: `projection.readOnly`
    _ = theme.receive(on: DispatchQueue.main).sink { print($0) }  // error: subscribe(on: queue)
    _ = theme.dropFirst()  // error: subscribeChanges(_:)
    theme.send(.dark)  // error: write a projection with modify(_:) or `state.part ~> newValue`
    _ = appearance.publisher.sink { print($0) }  // error: projections are not Combine publishers and have no publisher

    // swift-sharing
    appearance.withLock { $0.fontScale += 0.1 }  // error: use modify { $0 += 1 }
    try await appearance.load()  // error: refresh()
    try await appearance.save()  // error: call flush()

    // Observation: member syntax is a projection, not the part
    settings.appearance.theme = .dark  // error: write it with `state.part ~> newValue`
    appearance.fontScale += 0.1  // error: `state.part.modify { $0 += 1 }`
    appearance.tags.append("compact")  // error: `state.part.modify { $0 += 1 }`
    if appearance.theme == .dark {}  // error: read it with `state.part.value`

    // Misspelt members
    _ = theme.subscibe { print($0) }  // error: check the spelling; a projection has value, subscribe
    appearance.modfy { $0.theme = .dark }  // error: check the spelling; a projection has value, subscribe, observe, values, changes (and modify
}
