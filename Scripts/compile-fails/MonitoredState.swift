// Habits from Combine, swift-sharing and Observation on a plain container: each fails to compile
// with a message that names what StateKit spells instead (see Scripts/check-compile-fails.sh).
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
    var fontScale = 1.0
}

func habits(screen: SettingsScreen) async throws {
    let appearance = MonitoredState(Appearance(), key: "appearance")
    var subscriptions = Set<Subscription>()

    // Combine
    appearance.sink { print($0) }.store(in: &subscriptions)  // error: use subscribe(_:)
    _ = appearance.sink(receiveCompletion: { _ in }, receiveValue: { _ in })  // error: use subscribe(_:)
    _ = appearance.theme.assign(to: \.theme, on: screen)  // error: use subscribe(_:) and set the property in its handler
    _ = appearance.removeDuplicates()  // error: removingDuplicates(by:)
    _ = appearance.removeDuplicates { $0.theme == $1.theme }  // error: renamed to 'removingDuplicates(by:)'
    let erased: Observed<Appearance> = appearance.eraseToAnyPublisher()  // error: `state.readOnly`
    _ = appearance.receive(on: DispatchQueue.main)  // error: subscribe(on: queue)
    _ = appearance.receive(on: RunLoop.main)  // error: subscribeOnMain
    _ = appearance.dropFirst()  // error: subscribeChanges(_:)
    _ = appearance.debounce(for: .milliseconds(300), scheduler: DispatchQueue.main)  // error: state.values.debounce(for:
    _ = appearance.throttle(for: .seconds(1), scheduler: RunLoop.main, latest: true)  // error: `state.values.throttle(for:
    appearance.send(Appearance())  // error: use modify(_:) or `state ~> newValue`
    _ = appearance.publisher.sink { print($0) }  // error: not Combine publishers and have no publisher: subscribe(_:)
    _ = appearance.$value.sink { print($0) }  // error: A container has no `$value`: it is what `$property` of @Stateful gives

    // SwiftUI
    withTransaction { appearance.theme ~> .dark }  // error: use withStateTransaction { … }

    // swift-sharing
    appearance.withLock { $0.fontScale += 0.1 }  // error: use modify { $0 += 1 }
    try await appearance.load()  // error: refresh()
    try await appearance.save()  // error: flush()

    // Observation: member syntax is a projection, not the part
    appearance.theme = .dark  // error: write it with `state.part ~> newValue`
    appearance.fontScale += 0.1  // error: `state.part.modify { $0 += 1 }`
    if appearance.theme == .dark {}  // error: read it with `state.part.value`
    if appearance.isLarge {}  // error: read it with `state.part.value`
    appearance.isLarge = true  // error: cannot be written

    // Misspelt members
    _ = appearance.subscibe { print($0) }  // error: check the spelling; a container has value, modify, subscribe
    appearance.modfy { $0.theme = .dark }  // error: check the spelling; a container has value, modify, subscribe
    _ = appearance.theme.subscibe { print($0) }  // error: check the spelling; a projection has value, subscribe
    _ = erased
}
