import Foundation
import StateKit
import Testing

@Suite struct StateTests {
    @Test func readAfterModifyReturnsNewValue() {
        let state = State(1, key: uniqueKey())
        state.modify(2)
        #expect(state.value == 2)
        state ~> 3
        #expect(state.value == 3)
        state.modify { $0 += 1 }
        #expect(state.value == 4)
        #expect(state.version == 3)
    }
}
