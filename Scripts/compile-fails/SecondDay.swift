// Habits of a newcomer's second day, from swift-sharing and the Composable Architecture; see
// MonitoredState.swift.
import Foundation
import StateKit

struct Habit: Codable, Equatable, Identifiable, Sendable {
    var id: String
    var streak = 0
}

struct Tracker: Codable, Equatable, Sendable {
    var habits: [Habit] = []
    var selected: Habit?
}

enum TrackerAction {
    case habits(Int)
    case selected(Int)
}

// swift-sharing
final class SharingModel {
    @Shared(.appStorage("count")) var count = 0  // error: StateKit has no @Shared
    @Shared(.fileStorage(URL(fileURLWithPath: "/tmp/habits.json"))) var habits: [Habit] = []  // error: StateKit has no @Shared
    @Shared(.inMemory("draft")) var draft = ""  // error: StateKit has no @Shared
    @Shared(.appStorage("name")) var name: String  // error: StateKit has no @Shared
}

// The Composable Architecture
func scopes(store: MonitoredState<Tracker>, projection: Observed<Tracker>) {
    let habits = store.scope(state: \.habits, action: \.habits)  // error: StateKit has no stores of actions
    let selected = store.scope(state: \.selected, action: { TrackerAction.selected($0) })  // error: StateKit has no stores of actions
    let child = projection.scope(state: \.habits, action: \.habits)  // error: StateKit has no stores of actions
    _ = (habits, selected, child)
}
