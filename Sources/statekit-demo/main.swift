import StateKit

/// One part of the guided tour: a name for `--help`, and what it shows.
struct TourSection: Sendable {
    let name: String
    let summary: String
    let run: @Sendable () async throws -> Void
}

let sections: [TourSection] = [
    seedArticleSection,
    projectionsSection,
    storeSection,
    derivedSection,
    persistenceSection,
    syncSection,
    remoteSection,
    observationSection,
]

// Diagnostics are printed in the tour's own output, where the step that caused them is: on
// standard error they came out of order with the buffered standard output (a pipe), before the
// tour had begun.
StateDiagnostics.handler = { print("   diagnostic: \($0)") }

let arguments = CommandLine.arguments.dropFirst()
if arguments.contains("--help") || arguments.contains("-h") {
    print("usage: statekit-demo [section ...]\n       statekit-demo --inspect\n")
    print("--inspect serves a live view of a small model's state in the browser (StateKitInspector).")
    print("\nSections (all run when none is named):")
    for section in sections {
        print("  \(section.name.padding(toLength: 14, withPad: " ", startingAt: 0)) \(section.summary)")
    }
} else if arguments.contains("--inspect") {
    try InspectorDemo.run()
} else {
    let chosen = arguments.isEmpty ? sections : sections.filter { arguments.contains($0.name) }
    for section in chosen {
        print("\n== \(section.name): \(section.summary)")
        try await section.run()
    }
}
