// Habits on a read-only projection (Observed, and DerivedState, which is one); see
// MonitoredState.swift.
import Dispatch
import Foundation
import StateKit

enum Theme: String, Codable, Equatable, Sendable { case light, dark }

struct Appearance: Codable, Equatable, Sendable {
    var theme = Theme.light
    var fontScale = 1.0
    var isLarge: Bool { fontScale > 1.5 }
}

final class SettingsScreen: @unchecked Sendable {
    var theme = Theme.light
}

func habits(screen: SettingsScreen) async throws {
    let settings = MonitoredState(Appearance(), key: "appearance")
    let appearance: Observed<Appearance> = settings.readOnly
    let theme: Observed<Theme> = appearance.theme
    let isLarge: Observed<Bool> = settings.isLarge
    let scale: DerivedState<Double> = settings.map { $0.fontScale * 2 }

    // Combine
    _ = theme.sink { print($0) }  // error: use subscribe(_:)
    _ = scale.sink { print($0) }  // error: use subscribe(_:)
    _ = theme.assign(to: \.theme, on: screen)  // error: use subscribe(_:) and set the property in its handler
    _ = theme.removeDuplicates()  // error: removingDuplicates(by:)
    _ = scale.removeDuplicates().sink { print($0) }  // error: removingDuplicates(by:)
    _ = theme.eraseToAnyPublisher()  // error: hand out the projection itself
    _ = theme.receive(on: DispatchQueue.main)  // error: subscribe(on: queue)
    _ = scale.debounce(for: .seconds(0.3), scheduler: DispatchQueue.main).sink { print($0) }  // error: projection.values.debounce(for:
    theme.send(.dark)  // error: write a projection with modify(_:)
    _ = theme.publisher  // error: projections are not Combine publishers and have no publisher
    _ = scale.$value.sink { print($0) }  // error: A projection has no `$value`: subscribe(_:) to it

    // swift-sharing
    appearance.withLock { $0.fontScale += 0.1 }  // error: use modify { $0 += 1 }
    try await theme.load()  // error: refresh()
    try await theme.save()  // error: call flush()

    // Observation: member syntax is a projection, not the part
    if appearance.theme == .dark {}  // error: read it with `projection.part.value`
    appearance.theme = .dark  // error: cannot be written
    if isLarge.value {}

    // Misspelt members
    _ = isLarge.subscibe { print($0) }  // error: check the spelling; a projection has value, subscribe
    _ = scale.valeu  // error: check the spelling; a projection has value, subscribe
}
