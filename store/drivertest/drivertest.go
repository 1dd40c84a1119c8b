// Package drivertest is the store contract: every behaviour a store.Driver
// must have under the store.Ledger, as tests that run against any driver.
// Each driver's package runs it once (Run) with a Driver that opens a fresh
// database per subtest. The Drivers here (PostgreSQL, PostgreSQL as the
// runtime role, PostgreSQL without its batch statements, SQLite) are what
// the driver packages and the store's own tests run.
package drivertest

import (
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// Backend is one store under test, with what a contract test needs beside
// the interface: raw SQL on the same database, and its wake-ups.
type Backend struct {
	store.Store
	// Name is the Driver's name.
	Name string
	// Exec runs one statement on the backend's database, outside the Store.
	// Parameters are $1, $2… in the order they appear.
	Exec func(query string, args ...any) error
	// QueryInt runs a query returning one integer, e.g. a count.
	QueryInt func(query string, args ...any) (int, error)
	// QueryStrings runs a query returning one text column.
	QueryStrings func(query string) ([]string, error)
	// Notifier returns the backend's wake-ups, ready to deliver.
	Notifier func(t testing.TB) store.Notifier
}

// Count runs a counting query and fails the test on error.
func (b *Backend) Count(t *testing.T, query string) int {
	t.Helper()
	n, err := b.QueryInt(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// Driver opens a Backend per test; migrated false leaves the database empty.
type Driver struct {
	Name string
	Open func(t *testing.T, migrated bool) *Backend
}

// contract lists every contract test.
var contract = []struct {
	name string
	test func(t *testing.T, b *Backend)
}{
	{"EventsAreAppendOnly", testEventsAreAppendOnly},
	{"ChangesWakeSubscribers", testChangesWakeSubscribers},
	{"ExecutionsBackToReadyWakeTheDispatcher", testExecutionsBackToReadyWakeTheDispatcher},
	{"ClaimsAreExclusiveUnderConcurrency", testClaimsAreExclusiveUnderConcurrency},
	{"ClaimSkipsOtherToolsAndFutureRows", testClaimSkipsOtherToolsAndFutureRows},
	{"TransitionHonoursFromWorkerAndAttempt", testTransitionHonoursFromWorkerAndAttempt},
	{"TransitionRetryKeepsResponse", testTransitionRetryKeepsResponse},
	{"SupersedeReopensTheRequestInANewRound", testSupersedeReopensTheRequestInANewRound},
	{"SupersedeUnderANewPolicy", testSupersedeUnderANewPolicy},
	{"SupersedeToDenied", testSupersedeToDenied},
	{"ResolveNeedsReview", testResolveNeedsReview},
	{"ReportOutcomeOnce", testReportOutcomeOnce},
	{"ConcurrentReportsRecordOne", testConcurrentReportsRecordOne},
	{"OverdueOutcomesNeedReview", testOverdueOutcomesNeedReview},
	{"RestoreFlagsWhatTheCopyMayHaveForgotten", testRestoreFlagsWhatTheCopyMayHaveForgotten},
	{"ExpiredClaimsBecomeUnknownAndAreLeased", testExpiredClaimsBecomeUnknownAndAreLeased},
	{"TransitionBatchAppliesOnlyTheRowsThatMatch", testTransitionBatchAppliesOnlyTheRowsThatMatch},
	{"InsertThenReplaySameKey", testInsertThenReplaySameKey},
	{"InsertRequestConflictInsertsNothing", testInsertRequestConflictInsertsNothing},
	{"InsertRequestsMixesNewAndExistingKeys", testInsertRequestsMixesNewAndExistingKeys},
	{"SameKeyTwiceInOneBatchInsertsOnce", testSameKeyTwiceInOneBatchInsertsOnce},
	{"ConcurrentIdenticalInsertsInsertOnce", testConcurrentIdenticalInsertsInsertOnce},
	{"RedriveCardOnlyWhenNoPostIsQueued", testRedriveCardOnlyWhenNoPostIsQueued},
	{"CardUpdatesCoalesceWhileOneWaits", testCardUpdatesCoalesceWhileOneWaits},
	{"RequestByRef", testRequestByRef},
	{"CancelRequest", testCancelRequest},
	{"ExpireDue", testExpireDue},
	{"LookupsWithNULFindNothing", testLookupsWithNULFindNothing},
	{"ReadsOfIdsThatCannotExistFindNothing", testReadsOfIdsThatCannotExistFindNothing},
	{"RequestsByKeyPrefix", testRequestsByKeyPrefix},
	{"PartsAndHistoryAreTheSingleReads", testPartsAndHistoryAreTheSingleReads},
	{"RequestsByEffectString", testRequestsByEffectString},
	{"PendingAndUnresolvedLookups", testPendingAndUnresolvedLookups},
	{"ListRequestsNewestFirstAndFiltered", testListRequestsNewestFirstAndFiltered},
	{"ListRequestsSettledIsSettled", testListRequestsSettledIsSettled},
	{"ListRequestsNotSettledPagesInOrder", testListRequestsNotSettledPagesInOrder},
	{"ListRequestsPagesThroughWhileRequestsArrive", testListRequestsPagesThroughWhileRequestsArrive},
	{"RecentlyDecidedListsRequestsThatLeftPending", testRecentlyDecidedListsRequestsThatLeftPending},
	{"OutboxClaimDeliverRetry", testOutboxClaimDeliverRetry},
	{"OutboxRenew", testOutboxRenew},
	{"SlackPacing", testSlackPacing},
	{"SurfaceAttemptsAreCountedOnce", testSurfaceAttemptsAreCountedOnce},
	{"OutboxClaimsAreExclusiveUnderConcurrency", testOutboxClaimsAreExclusiveUnderConcurrency},
	{"CardsRecordFirstAndConverge", testCardsRecordFirstAndConverge},
	{"OutboxFansOutToSurfaces", testOutboxFansOutToSurfaces},
	{"DecideFirstWriterWins", testDecideFirstWriterWins},
	{"ApproveCreatesReadyExecutionFromTheRequest", testApproveCreatesReadyExecutionFromTheRequest},
	{"RejectCreatesNoExecution", testRejectCreatesNoExecution},
	{"DecideRefusesStaleRoundOrHash", testDecideRefusesStaleRoundOrHash},
	{"PolicyIsStoredWithTheRequest", testPolicyIsStoredWithTheRequest},
	{"QuorumDecidesOnTheNthDistinctApproval", testQuorumDecidesOnTheNthDistinctApproval},
	{"QuorumOneRejectDecidesWithItsReason", testQuorumOneRejectDecidesWithItsReason},
	{"QuorumUnderConcurrency", testQuorumUnderConcurrency},
	{"VoteRefusesStaleRoundOrHash", testVoteRefusesStaleRoundOrHash},
	{"EditSettlesTheOriginalAndApprovesTheEdit", testEditSettlesTheOriginalAndApprovesTheEdit},
	{"EditThatNeedsMoreApprovalsWaits", testEditThatNeedsMoreApprovalsWaits},
	{"EditOfAClosedRequestWritesNothing", testEditOfAClosedRequestWritesNothing},
	{"EditRacingApprovalsOneWins", testEditRacingApprovalsOneWins},
	{"GrantIsCreatedByTheDecidingApproval", testGrantIsCreatedByTheDecidingApproval},
	{"GrantRevokesOnce", testGrantRevokesOnce},
	{"IntakeHoldsTheGrant", testIntakeHoldsTheGrant},
	{"IntakesRacingARevocationEndWhole", testIntakesRacingARevocationEndWhole},
	{"NudgesQueueOncePerRound", testNudgesQueueOncePerRound},
	{"NudgesSkipRequestsNoLongerPending", testNudgesSkipRequestsNoLongerPending},
	{"ReopenedRoundGetsItsOwnNudges", testReopenedRoundGetsItsOwnNudges},
	{"ConcurrentNudgesQueueOnce", testConcurrentNudgesQueueOnce},
	{"PendingByTool", testPendingByTool},
	{"VersionGrowsOnEveryVisibleChange", testVersionGrowsOnEveryVisibleChange},
	{"CallbacksQueueWithTheirTransition", testCallbacksQueueWithTheirTransition},
	{"CallbackClaimRetryDeliverRedrive", testCallbackClaimRetryDeliverRedrive},
	{"CallbackRenew", testCallbackRenew},
	{"CallbackClaimsAreExclusiveUnderConcurrency", testCallbackClaimsAreExclusiveUnderConcurrency},
	{"NotifyWakesOnCommitOnly", testNotifyWakesOnCommitOnly},
	{"EnqueueStaleCardsTakesItsThresholds", testEnqueueStaleCardsTakesItsThresholds},
	{"CardStateIsCardStateOf", testCardStateIsCardStateOf},
	{"BatchesWriteWhatTheyAreOwed", testBatchesWriteWhatTheyAreOwed},
	{"PruneLeavesTombstonesAndNeverRunsAKeyTwice", testPruneLeavesTombstonesAndNeverRunsAKeyTwice},
	{"PruneDuringIntakeLosesNothing", testPruneDuringIntakeLosesNothing},
	{"PruneWaitsForPendingCallbacks", testPruneWaitsForPendingCallbacks},
	{"AuditChainVerifiesAndNamesTheFirstBadEvent", testAuditChainVerifiesAndNamesTheFirstBadEvent},
	{"AuditMonthDroppedLeavesACheckpointThatVerifies", testAuditMonthDroppedLeavesACheckpointThatVerifies},
	{"AuditAnchorNamesRequestsChangedSince", testAuditAnchorNamesRequestsChangedSince},
}

// Run runs every contract test against d, each as a parallel subtest on a
// database of its own.
func Run(t *testing.T, d Driver) {
	for _, c := range contract {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(t, d.Open(t, true))
		})
	}
}

// waitWake fails the test unless wake fires within the deadline.
func waitWake(t *testing.T, wake <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake-up for %s", what)
	}
}

// Release starts n goroutines blocked on one signal, runs them together and
// waits for all.
func Release(n int, fn func(i int)) {
	start := make(chan struct{})
	done := make(chan struct{}, n)
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			fn(i)
		}()
	}
	close(start)
	for range n {
		<-done
	}
}
