"""The multi-domain suite in Mila's manner: language, translation, generation,
recommendation, super-resolution, style transfer, detection, regression, time series
and reinforcement learning, plus the input pipeline alone.

Plain metadata (``ModelInfo``, each entry naming its builders with ``built_by``); the
builders and what a training step does (the workload) live in
``dlbench.models.pytorch``. Each model counts throughput in its
natural unit (``unit``): tokens for language models, images, samples, environment
steps. ``num_classes`` is the width of the model's output softmax where it has one
(the vocabulary of a language model, the actions of a policy) and 1 otherwise.
Sequence models declare ``input_shape == (seq_len,)`` so that ``exp.seq_len``
resizes them; ``is_image`` is set where ``exp.image_size`` resizes a fully
convolutional model (espcn, fast_style, ssd_lite), not for the DCGAN and the VAE,
whose architectures fix their 64x64 and 28x28 images.
"""

from __future__ import annotations

from dlbench.config.modelinfo import ModelInfo, built_by

DOMAIN_MODELS: tuple[ModelInfo, ...] = (
    ModelInfo(
        id="bert_base",
        builders=built_by(pytorch="lm:bert_base", jax="lm:bert_base", tensorflow="lm:bert_base"),
        title="BERT-base (masked LM)",
        domain="language modelling",
        input_shape=(128,),
        num_classes=30522,
        vocab_size=30522,
        seq_len=128,
        default_batch=32,
        unit="tokens/s",
        is_image=False,
        task="masked_lm",
        real_data="text",
        # Hugging Face's BertForMaskedLM (bert-base-uncased): no pooler, decoder tied
        # to the word embeddings plus its own bias.
        reference_params=109_514_298,
        description=(
            "BERT-base encoder (12 layers, 768 wide, 12 heads, vocabulary 30,522) trained "
            "on masked-token prediction: 15% of the positions masked; tokens/s."
        ),
    ),
    ModelInfo(
        id="gpt2_small",
        builders=built_by(pytorch="lm:gpt2_small", jax="lm:gpt2_small",
                          tensorflow="lm:gpt2_small"),
        title="GPT-2 small",
        domain="language modelling",
        input_shape=(1024,),
        num_classes=50257,
        vocab_size=50257,
        seq_len=1024,
        default_batch=8,
        unit="tokens/s",
        is_image=False,
        task="causal_lm",
        real_data="text",
        reference_params=124_439_808,  # tied embeddings, 1,024 positions
        description=(
            "GPT-2 small (12 layers, 768 wide, 12 heads, vocabulary 50,257, tied "
            "embeddings) trained on next-token prediction; tokens/s."
        ),
    ),
    ModelInfo(
        id="wlm",
        builders=built_by(pytorch="lm:wlm"),
        title="Word language model (LSTM)",
        domain="language modelling",
        input_shape=(35,),
        num_classes=33278,
        vocab_size=33278,
        seq_len=35,
        default_batch=20,
        unit="tokens/s",
        is_image=False,
        task="causal_lm",
        real_data="text",
        description=(
            "PyTorch's word_language_model example: two-layer LSTM, embeddings and hidden "
            "650, vocabulary of WikiText-2 (33,278), 35-token windows; tokens/s."
        ),
    ),
    ModelInfo(
        id="translator",
        builders=built_by(pytorch="translation:translator"),
        title="Transformer base (translation)",
        domain="machine translation",
        input_shape=(64,),
        num_classes=32000,
        vocab_size=32000,
        seq_len=64,
        default_batch=64,
        unit="tokens/s",
        is_image=False,
        task="translation",
        description=(
            "Transformer base encoder-decoder (6+6 layers, 512 wide, 8 heads) with a shared "
            "32,000 sub-word vocabulary, teacher-forced; tokens/s counts target tokens."
        ),
    ),
    ModelInfo(
        id="dcgan",
        builders=built_by(pytorch="generative:dcgan"),
        title="DCGAN",
        domain="image generation",
        input_shape=(3, 64, 64),
        num_classes=1,
        default_batch=64,
        unit="images/s",
        is_image=False,
        task="gan",
        real_data="images",
        description=(
            "PyTorch's dcgan example at 64x64: one step is a discriminator step then a "
            "generator step; inference runs the generator. Real images feed the "
            "discriminator when exp.data_dir is set."
        ),
    ),
    ModelInfo(
        id="vae",
        builders=built_by(pytorch="generative:vae"),
        title="Variational auto-encoder",
        domain="image generation",
        input_shape=(1, 28, 28),
        num_classes=1,
        default_batch=128,
        unit="samples/s",
        is_image=False,
        task="vae",
        description=(
            "PyTorch's vae example (784-400-20, MNIST-sized); inference encodes and decodes."
        ),
    ),
    ModelInfo(
        id="ncf",
        builders=built_by(pytorch="recsys_toys:ncf"),
        title="Neural collaborative filtering (NeuMF)",
        domain="recommendation",
        input_shape=(2,),
        num_classes=1,
        default_batch=4096,
        unit="samples/s",
        is_image=False,
        task="recommendation",
        description=(
            "NeuMF as in MLPerf on MovieLens 20M (138,493 users, 26,744 items): GMF with 64 "
            "factors and an MLP 256-256-128-64; binary cross-entropy on implicit feedback."
        ),
    ),
    ModelInfo(
        id="espcn",
        builders=built_by(pytorch="imaging:espcn"),
        title="ESPCN super-resolution x3",
        domain="super-resolution",
        input_shape=(1, 85, 85),
        num_classes=1,
        default_batch=64,
        unit="images/s",
        task="super_resolution",
        description=(
            "PyTorch's super_resolution example: sub-pixel CNN upscaling the luminance x3 "
            "(85 px in, 255 px out); exp.image_size sets the low-resolution side."
        ),
    ),
    ModelInfo(
        id="fast_style",
        builders=built_by(pytorch="imaging:fast_style"),
        title="Fast neural style",
        domain="style transfer",
        input_shape=(3, 256, 256),
        num_classes=1,
        default_batch=4,
        unit="images/s",
        task="style_transfer",
        min_image_size=5,  # the first 9x9 convolution reflects 4 pixels
        description=(
            "The transformer network of PyTorch's fast_neural_style example (5 residual "
            "blocks), trained with MSE to a target image instead of the VGG-16 perceptual "
            "loss, which would make it a VGG benchmark."
        ),
    ),
    ModelInfo(
        id="ssd_lite",
        builders=built_by(pytorch="detection:ssd_lite"),
        title="SSDLite (MobileNetV2)",
        domain="object detection",
        input_shape=(3, 320, 320),
        num_classes=81,
        default_batch=32,
        unit="images/s",
        task="detection",
        description=(
            "SSDLite on a MobileNetV2 backbone, 6 feature maps, 81 classes (COCO and "
            "background); training matches random boxes to priors (smooth L1 + "
            "cross-entropy with hard negatives). Inference: the network, no NMS."
        ),
    ),
    ModelInfo(
        id="toy_reg",
        builders=built_by(pytorch="recsys_toys:toy_reg"),
        title="Polynomial regression (toy)",
        domain="regression",
        input_shape=(1,),
        num_classes=1,
        default_batch=32,
        unit="samples/s",
        is_image=False,
        task="regression",
        description=(
            "PyTorch's regression example: a linear layer fits a degree-4 polynomial on "
            "[x, x^2, x^3, x^4]; microseconds a step, so it times the framework's overhead."
        ),
    ),
    ModelInfo(
        id="toy_lstm",
        builders=built_by(pytorch="recsys_toys:toy_lstm"),
        title="LSTM time-series prediction (toy)",
        domain="time series",
        input_shape=(1000,),
        num_classes=1,
        seq_len=1000,
        default_batch=97,
        unit="samples/s",
        is_image=False,
        task="time_series",
        description=(
            "PyTorch's time_sequence_prediction example: two stacked LSTMs of 51 units "
            "predict the next value of 97 shifted sine waves of 1,000 steps."
        ),
    ),
    ModelInfo(
        id="cart",
        builders=built_by(pytorch="cartpole:cart"),
        title="Cart-pole REINFORCE agent",
        domain="reinforcement learning",
        input_shape=(4,),
        num_classes=2,
        seq_len=200,
        default_batch=64,
        unit="steps/s",
        is_image=False,
        task="reinforcement_learning",
        description=(
            "PyTorch's reinforce example on cart-pole simulated in torch, one environment "
            "per sample: a step is a 200-step rollout (exp.seq_len) and a policy-gradient "
            "update; steps/s counts environment steps."
        ),
    ),
    ModelInfo(
        id="loader",
        builders=built_by(pytorch="workload_base:no_model"),
        title="Image loader",
        domain="input pipeline",
        input_shape=(3, 224, 224),
        num_classes=1000,
        default_batch=64,
        unit="images/s",
        is_image=True,
        task="input_pipeline",
        real_data="images",
        description=(
            "decodes and resizes a folder of JPEGs through the DataLoader: input-pipeline "
            "throughput alone"
        ),
    ),
)
