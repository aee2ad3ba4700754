"""Sentences the runtime speaks after a model build to learn Kokoro's decoder statistics.

Every voice speaks three of them, the voices taking turns through the list, to learn its averages and
the regression from a sentence's frame-rate statistics to its vocoder statistics
(:mod:`voxserve.engines.stats_model`). They vary in length, punctuation and sound, and were written for
voxserve; none of them is in ``bench/fidelity.py``, which measures the result on other sentences.
"""

from __future__ import annotations

TEACHING_SENTENCES = (
    "Thanks for calling, how can I help you today?",
    "The package should reach your door by Friday afternoon.",
    "Let me look that up for you right away.",
    "Your appointment is confirmed for Tuesday at three in the afternoon.",
    "I'm sorry, but that item is currently out of stock.",
    "Would you like me to send the receipt by email?",
    "The train to the airport leaves every twenty minutes.",
    "Please remember to bring a photo ID to the front desk.",
    "Great, I have updated your shipping address.",
    "It looks like the payment did not go through.",
    "Could you spell your last name for me, please?",
    "The museum opens at nine and closes at five.",
    "We have two rooms available with a view of the lake.",
    "Your package was left at the side door this afternoon.",
    "Is there a phone number where we can reach you?",
    "The forecast calls for heavy rain tonight and clear skies tomorrow.",
    "I can transfer you to a specialist if you prefer.",
    "That refund should appear in five to seven business days.",
    "Hmm, I don't see any record of that order.",
    "Turn left at the second light, then keep going straight.",
    "Our support team is available around the clock.",
    "Okay! Your table for four is booked.",
    "Do you want the small, the medium, or the large size?",
    "The meeting has been moved to Friday morning.",
    "Your password must have at least twelve characters.",
    "We noticed a sign-in from a new device yesterday evening.",
    "The kitchen closes in about fifteen minutes.",
    "Would you like to hear today's specials?",
    "I've added a note to your account about the delay.",
    "Yes, pets are welcome in all of our cabins.",
    "The battery should last about ten hours on a single charge.",
    "Sorry about the wait, and thank you for your patience.",
    "Your current balance is forty two dollars and fifty cents.",
    "We'll text you when the driver is nearby.",
    "Which city are you flying out of?",
    "Every order over fifty dollars ships for free.",
    "I understand, that must be really frustrating.",
    "The library will be closed on Monday for the holiday.",
    "Just a moment while I pull up your file.",
    "Have you tried restarting the router?",
    "Our new menu features fresh fish and seasonal vegetables.",
    "Goodbye, and have a wonderful evening!",
)
