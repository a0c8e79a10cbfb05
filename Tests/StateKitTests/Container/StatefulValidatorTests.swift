import Foundation
import StateKit
import StateKitTesting
import Testing

private struct NegativeQuantity: Error {}

/// A model whose quantity may not go below zero, with a key of its own per instance.
private final class CartModel: @unchecked Sendable {
    @Stateful var quantity: Int

    init(key: String) {
        _quantity = Stateful(wrappedValue: 1, key: key) { _, proposed in
            guard proposed >= 0 else { throw NegativeQuantity() }
        }
    }
}

@Suite struct StatefulValidatorTests {
    @Test func refusedSetterKeepsTheValueAndReportsARejectedWrite() {
        let key = uniqueKey()
        let diagnostics = StateKitTesting.DiagnosticsRecorder(involving: key)
        let cart = CartModel(key: key)
        let values = cart.$quantity.record()
        cart.quantity = -1
        #expect(cart.quantity == 1)
        #expect(cart.$quantity.version == 0)
        #expect(values.values == [1])
        #expect(diagnostics.diagnostics.map(\.kind) == [.rejectedWrite])
        #expect(diagnostics.diagnostics.first?.error is NegativeQuantity)
    }

    @Test func acceptedSetterWrites() {
        let cart = CartModel(key: uniqueKey())
        cart.quantity = 3
        #expect(cart.quantity == 3)
        #expect(cart.$quantity.version == 1)
    }

    @Test func throwingSetOnTheContainerThrowsTheRefusal() {
        let key = uniqueKey()
        let cart = CartModel(key: key)
        #expect(throws: RejectedWriteError.self) { try cart.$quantity.set(-5) }
        #expect(cart.quantity == 1)
    }

    @Test func validatorInTheAttributeGuardsTheProperty() {
        final class Declared: @unchecked Sendable {
            @Stateful(
                key: "declared.quantity",
                validator: { _, proposed in
                    guard proposed >= 0 else { throw NegativeQuantity() }
                })
            var quantity = 2
        }
        let model = Declared()
        model.quantity = -1
        #expect(model.quantity == 2)
        #expect(model.$quantity.key == "declared.quantity")
    }
}
